"""The ``scheduler_*`` Prometheus metrics, with upstream names, types, labels and buckets,
plus the component metrics every Kubernetes component exposes: the API
client's ``rest_client_*`` (client-go's names, labels and buckets),
``leader_election_master_status``, and the process and Python runtime
collectors (``process_*``, ``python_gc_*``, ``python_info``) from
prometheus_client.

``SchedulerMetrics(registry)`` creates every metric and registers them, as one
collector, on the registry passed in; nothing touches the global default
registry, so two instances (two tests, two schedulers) never collide.

Invariants:
- Exposed names are exactly upstream's. prometheus_client appends ``_total`` to
  counters, so counters are constructed without it.
- prometheus_client also emits a ``<name>_created`` series per counter and
  histogram child; upstream has none, so the collector drops those samples.
- Label values come from the enums below or from enums the framework owns
  (``Code.label``, ``ExtensionPoint``); callers never retype them.
- Recording is synchronous and cheap: safe inside the scheduling cycle.
"""

from __future__ import annotations

import bisect
import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from scheduler.cycle.contracts import AttemptResult
from scheduler.framework.interfaces import ExtensionPoint
from scheduler.framework.status import Code

BUILD_INFO_LABELS = (
    "build_date",
    "compiler",
    "git_commit",
    "git_tree_state",
    "git_version",
    "go_version",
    "major",
    "minor",
    "platform",
)


class QueueName(enum.StrEnum):
    """``queue`` of ``scheduler_pending_pods`` and ``scheduler_queue_incoming_pods_total``."""

    ACTIVE = "active"
    BACKOFF = "backoff"
    UNSCHEDULABLE = "unschedulable"
    GATED = "gated"


class CacheType(enum.StrEnum):
    """``type`` of ``scheduler_cache_size``."""

    ASSUMED_PODS = "assumed_pods"
    PODS = "pods"
    NODES = "nodes"


class HintResult(enum.StrEnum):
    """``hint`` of ``scheduler_queueing_hint_execution_duration_seconds``."""

    QUEUE = "Queue"
    QUEUE_SKIP = "QueueSkip"
    ERROR = "Error"


class Operation(enum.StrEnum):
    """``operation`` of ``scheduler_goroutines`` besides the extension point names
    (``ExtensionPoint.FILTER``/``SCORE``) used for parallel node evaluation."""

    BINDING = "binding"
    PRIORITIZING_EXTENDER = "prioritizing_extender"


SLI_ATTEMPTS_CAP = 15


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Prometheus ``ExponentialBuckets``: ``count`` upper bounds from ``start``."""
    if start <= 0 or factor <= 1 or count < 1:
        raise ValueError(f"invalid exponential buckets ({start}, {factor}, {count})")
    return tuple(start * factor**i for i in range(count))


def attempts_label(attempts: int) -> str:
    """The SLI ``attempts`` label: ``"1"`` .. ``"14"``, then ``"15+"``."""
    if attempts >= SLI_ATTEMPTS_CAP:
        return f"{SLI_ATTEMPTS_CAP}+"
    return str(attempts)


class _WithoutCreated(Collector):
    """Exposes the wrapped metrics minus prometheus_client's ``_created`` samples."""

    def __init__(self, metrics: Sequence[MetricWrapperBase]) -> None:
        self._metrics = tuple(metrics)

    def describe(self) -> Iterable[Metric]:
        for metric in self._metrics:
            yield from metric.describe()

    def collect(self) -> Iterable[Metric]:
        for metric in self._metrics:
            for family in metric.collect():
                family.samples = [s for s in family.samples if not s.name.endswith("_created")]
                yield family


def _go_float(value: float) -> str:
    """How prometheus_client renders a bucket bound (``le``)."""
    rendered: str = floatToGoString(value)  # type: ignore[no-untyped-call]
    return rendered


class BatchHistogram(Collector):
    """A labelled histogram that takes observations in batches.

    ``scheduler_plugin_execution_duration_seconds`` gets one observation per
    plugin per node in sampled cycles: thousands per cycle. prometheus_client
    takes a lock and walks the buckets per observation; this keeps plain
    bucket counts per label set, bisects, and builds the family on collect.
    Single-threaded by design (the event loop), like the rest of the engine.
    """

    def __init__(
        self, name: str, doc: str, labels: Sequence[str], buckets: Sequence[float]
    ) -> None:
        self._name = name
        self._doc = doc
        self._labels = tuple(labels)
        self._bounds = tuple(buckets)
        self._les = [_go_float(bound) for bound in self._bounds] + ["+Inf"]
        self._series: dict[tuple[str, ...], list[float]] = {}  # counts..., sum

    def observe(self, labels: tuple[str, ...], value: float) -> None:
        series = self._series.get(labels)
        if series is None:
            series = self._series[labels] = [0.0] * (len(self._bounds) + 2)
        series[bisect.bisect_left(self._bounds, value)] += 1
        series[-1] += value

    def describe(self) -> Iterable[Metric]:
        yield HistogramMetricFamily(self._name, self._doc, labels=self._labels)

    def collect(self) -> Iterable[Metric]:
        family = HistogramMetricFamily(self._name, self._doc, labels=self._labels)
        for labels, series in self._series.items():
            cumulative = 0.0
            buckets = []
            for le, count in zip(self._les, series[:-1], strict=True):
                cumulative += count
                buckets.append((le, cumulative))
            family.add_metric(list(labels), buckets, sum_value=series[-1])
        yield family


class BatchCounter(Collector):
    """A labelled counter kept as plain floats (``name`` without ``_total``).

    ``scheduler_plugin_evaluation_total`` takes one increment per plugin per
    extension point per cycle; prometheus_client's children take a lock and
    check the value on each. Exposed like a Counter minus ``_created``.
    Single-threaded by design (the event loop), like the rest of the engine.
    """

    def __init__(self, name: str, doc: str, labels: Sequence[str]) -> None:
        self._name = name
        self._doc = doc
        self._labels = tuple(labels)
        self._series: dict[tuple[str, ...], float] = {}

    def inc(self, labels: tuple[str, ...], amount: float = 1.0) -> None:
        series = self._series
        series[labels] = series.get(labels, 0.0) + amount

    def describe(self) -> Iterable[Metric]:
        yield CounterMetricFamily(self._name, self._doc, labels=self._labels)

    def collect(self) -> Iterable[Metric]:
        family = CounterMetricFamily(self._name, self._doc, labels=self._labels)
        for labels, value in self._series.items():
            family.add_metric(list(labels), value)
        yield family


class SchedulerMetrics:
    """Every ``scheduler_*`` metric, registered on ``registry``, with typed recorders.

    Also satisfies the queue's metrics protocol (``incoming``, ``pending``,
    ``unschedulable_plugin``, ``hint``, ``inflight_events``).
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        def counter(name: str, doc: str, labels: Sequence[str] = ()) -> Counter:
            return Counter(name, doc, labels, registry=None)

        def gauge(name: str, doc: str, labels: Sequence[str]) -> Gauge:
            return Gauge(name, doc, labels, registry=None)

        def histogram(
            name: str, doc: str, labels: Sequence[str], buckets: tuple[float, ...]
        ) -> Histogram:
            return Histogram(name, doc, labels, registry=None, buckets=buckets)

        attempt_buckets = exponential_buckets(0.001, 2, 15)
        fine_buckets = exponential_buckets(0.0001, 2, 12)
        plugin_buckets = exponential_buckets(0.00001, 1.5, 20)

        self._schedule_attempts = counter(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result.",
            ("result", "profile"),
        )
        self._attempt_duration = histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding).",
            ("result", "profile"),
            attempt_buckets,
        )
        self._algorithm_duration = histogram(
            "scheduler_scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds.",
            (),
            attempt_buckets,
        )
        self._sli_duration = histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the "
            "scheduling queue, possibly over several attempts.",
            ("attempts",),
            exponential_buckets(0.01, 2, 20),
        )
        self._pod_attempts = histogram(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            (),
            exponential_buckets(1, 2, 5),
        )
        self._pending_pods = gauge(
            "scheduler_pending_pods", "Number of pending pods, by the queue type.", ("queue",)
        )
        self._incoming_pods = counter(
            "scheduler_queue_incoming_pods",
            "Number of pods added to scheduling queues by event and queue type.",
            ("queue", "event"),
        )
        self._unschedulable_pods = gauge(
            "scheduler_unschedulable_pods",
            "The number of unschedulable pods broken down by plugin name.",
            ("plugin", "profile"),
        )
        # Batch collectors: several per cycle on the hot path (see their docs).
        self._extension_point_duration = BatchHistogram(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ("extension_point", "status", "profile"),
            exponential_buckets(0.0001, 2, 12),
        )
        self._plugin_execution_duration = BatchHistogram(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ("plugin", "extension_point", "status"),
            plugin_buckets,
        )
        self._plugin_evaluation = BatchCounter(
            "scheduler_plugin_evaluation",
            "Number of attempts to schedule pods by each plugin and extension point.",
            ("plugin", "extension_point", "profile"),
        )
        self._permit_wait_duration = histogram(
            "scheduler_permit_wait_duration_seconds",
            "Duration of waiting on permit.",
            ("result",),
            attempt_buckets,
        )
        self._cache_size = gauge(
            "scheduler_cache_size",
            "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            ("type",),
        )
        self._goroutines = gauge(
            "scheduler_goroutines",
            "Number of running tasks split by the work they do such as binding.",
            ("operation",),
        )
        self._event_handling_duration = histogram(
            "scheduler_event_handling_duration_seconds",
            "Event handling latency in seconds.",
            ("event",),
            fine_buckets,
        )
        # one observation per pooled pod per cluster event: a batch collector
        self._hint_duration = BatchHistogram(
            "scheduler_queueing_hint_execution_duration_seconds",
            "Duration for running a queueing hint function of a plugin.",
            ("plugin", "event", "hint"),
            plugin_buckets,
        )
        self._inflight_events = gauge(
            "scheduler_inflight_events",
            "Number of events currently tracked in the scheduling queue.",
            ("event",),
        )
        self._scheduled_after_flush = counter(
            "scheduler_pod_scheduled_after_flush",
            "Number of pods that were successfully scheduled after being flushed from "
            "unschedulablePods due to timeout.",
        )
        self._preemption_attempts = counter(
            "scheduler_preemption_attempts", "Total preemption attempts in the cluster till now."
        )
        self._preemption_victims = histogram(
            "scheduler_preemption_victims",
            "Number of selected preemption victims.",
            (),
            exponential_buckets(1, 2, 7),
        )
        self._resourceclaim_creates = counter(
            "scheduler_resourceclaim_creates",
            "Number of ResourceClaims creation requests within scheduler",
            ("status",),
        )
        self._binding_conditions_wait = histogram(
            "scheduler_dra_bindingconditions_wait_duration_seconds",
            "Time PreBind waited for DRA device binding conditions, by driver and outcome.",
            ("profile", "driver", "status"),
            exponential_buckets(0.1, 2, 14),
        )
        self._binding_conditions_allocations = counter(
            "scheduler_dra_bindingconditions_allocations",
            "DRA allocations whose devices have binding conditions, by driver and outcome.",
            ("profile", "driver", "status"),
        )
        # VolumeBinding's (pkg/scheduler/framework/plugins/volumebinding/metrics):
        # the cache counter is registered but, as upstream 1.36, never counted.
        self._volume_binder_cache_requests = counter(
            "scheduler_volume_binder_cache_requests",
            "Total number for request volume binding cache",
            ("operation",),
        )
        self._volume_stage_errors = counter(
            "scheduler_volume_scheduling_stage_error",
            "Volume scheduling stage error count",
            ("operation",),
        )
        self._leader = gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, "
            "0 indicates backup, 1 indicates master. 'name' is the string used "
            "to identify the lease.",
            ("name",),
        )
        # component-base's build info and feature-gate families.
        self._build_info = gauge(
            "kubernetes_build_info",
            "A metric with a constant '1' value labeled by major, minor, git version, "
            "git commit, git tree state, build date, Go version, and compiler from which "
            "Kubernetes was built, and platform on which it is running.",
            BUILD_INFO_LABELS,
        )
        self._feature_enabled = gauge(
            "kubernetes_feature_enabled",
            "This metric records the data about the stage and enablement of a k8s feature.",
            ("name", "stage"),
        )
        self._add_own()
        self._leader_slowpath = counter(
            "leader_election_slowpath",
            "Total number of slow path exercised in renewing leader leases. 'name' is the "
            "string used to identify the lease. Please make sure to group by name.",
            ("name",),
        )
        rest_buckets = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
        self._rest_requests = counter(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ("code", "method", "host"),
        )
        self._rest_duration = histogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            ("verb", "host"),
            rest_buckets,
        )
        self._rest_limiter = histogram(
            "rest_client_rate_limiter_duration_seconds",
            "Client side rate limiter latency in seconds. Broken down by verb, and host.",
            ("verb", "host"),
            rest_buckets,
        )
        registry.register(
            _WithoutCreated(
                [value for value in vars(self).values() if isinstance(value, MetricWrapperBase)]
            )
        )
        # process_* (from /proc), python_info and python_gc_*, on our registry.
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
        GCCollector(registry=registry)
        registry.register(self._plugin_execution_duration)
        registry.register(self._extension_point_duration)
        registry.register(self._plugin_evaluation)
        registry.register(self._hint_duration)
        # Labelled children by (metric, labels): ``labels()`` costs a lock and
        # several lookups, too much for per-plugin calls on the hot path.
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}

    def _add_own(self) -> None:
        """Ours, not upstream's: the ``pyscheduler_*`` families."""
        # How late the event loop runs what is due (scheduler.ops.looplag).
        self._loop_lag = Histogram(
            "pyscheduler_event_loop_lag_seconds",
            "How late the event loop woke a periodic tick, in seconds: the time every "
            "informer event, bind and probe waited behind the work ahead of it.",
            (),
            registry=None,
            buckets=exponential_buckets(0.001, 2, 14),
        )
        self._loop_longest_stall = Gauge(
            "pyscheduler_event_loop_longest_stall_seconds",
            "The longest event-loop lag seen in the last one to two minutes, in seconds.",
            (),
            registry=None,
        )
        # The adaptive bind limit (scheduler.cycle.concurrency).
        self._bind_concurrency_limit = Gauge(
            "pyscheduler_binding_concurrency_limit",
            "How many binding cycles may write (PreBind, Bind) at once now; it follows "
            "the bind latency up to --max-concurrent-binds (0: unbounded).",
            (),
            registry=None,
        )

    def _child(self, metric: MetricWrapperBase, *labels: str) -> Any:
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    # ---------------------------------------------------- component metrics
    def build_info(self, labels: Mapping[str, str]) -> None:
        """``kubernetes_build_info`` = 1 with the build's labels."""
        self._build_info.labels(*(labels.get(name, "") for name in BUILD_INFO_LABELS)).set(1)

    def feature_gates(self, gates: Mapping[str, tuple[bool, str]]) -> None:
        """``kubernetes_feature_enabled{name,stage}``: gate -> (value, stage);
        GA gates have an empty stage, as upstream writes them."""
        for name, (value, stage) in gates.items():
            self._feature_enabled.labels(name, "" if stage == "GA" else stage).set(int(value))

    def loop_lag(self, seconds: float, longest_recent: float) -> None:
        self._loop_lag.observe(seconds)
        self._loop_longest_stall.set(longest_recent)

    # ------------------------------------------------------------ attempts
    def attempt(self, result: AttemptResult, profile: str, seconds: float) -> None:
        """An attempt ended (upstream ``PodScheduled``, ``PodUnschedulable``...)."""
        self._child(self._schedule_attempts, result.value, profile).inc()
        self._child(self._attempt_duration, result.value, profile).observe(seconds)

    def algorithm(self, seconds: float) -> None:
        self._algorithm_duration.observe(seconds)

    def sli(self, attempts: int, seconds: float) -> None:
        """A pod was bound ``seconds`` after its first attempt, on attempt ``attempts``."""
        self._child(self._sli_duration, attempts_label(attempts)).observe(seconds)

    def pod_attempts(self, attempts: int) -> None:
        """A pod was bound after ``attempts`` attempts."""
        self._pod_attempts.observe(attempts)

    def scheduled_after_flush(self) -> None:
        self._scheduled_after_flush.inc()

    # --------------------------------------------------------------- queue
    def incoming(self, queue: str, event: str) -> None:
        self._child(self._incoming_pods, queue, event).inc()

    def pending(self, queue: str, count: int) -> None:
        self._child(self._pending_pods, queue).set(count)

    def unschedulable_plugin(self, plugin: str, profile: str, delta: int) -> None:
        self._unschedulable_pods.labels(plugin, profile).inc(delta)

    def hint(self, plugin: str, event: str, hint: str, seconds: float) -> None:
        self._hint_duration.observe((plugin, event, hint), seconds)

    def inflight_events(self, event: str, delta: int) -> None:
        self._child(self._inflight_events, event).inc(delta)

    # ----------------------------------------------------------- framework
    def extension_point(
        self, point: ExtensionPoint, status: Code, profile: str, seconds: float
    ) -> None:
        self._extension_point_duration.observe((point.value, status.label, profile), seconds)

    def plugin_execution(
        self, plugin: str, point: ExtensionPoint, status: Code, seconds: float
    ) -> None:
        self._plugin_execution_duration.observe((plugin, point.value, status.label), seconds)

    def plugin_executions(self, samples: Iterable[tuple[str, ExtensionPoint, Code, float]]) -> None:
        """Many ``plugin_execution`` observations at once (a sampled cycle's)."""
        observe = self._plugin_execution_duration.observe
        for plugin, point, status, seconds in samples:
            observe((plugin, point.value, status.label), seconds)

    def plugin_evaluations(
        self, point: ExtensionPoint, profile: str, counts: Mapping[str, int]
    ) -> None:
        """``scheduler_plugin_evaluation_total`` for many invocations at once."""
        inc = self._plugin_evaluation.inc
        extension_point = point.value
        for plugin, count in counts.items():
            if count:
                inc((plugin, extension_point, profile), count)

    def plugin_evaluation(self, plugin: str, point: ExtensionPoint, profile: str) -> None:
        self._plugin_evaluation.inc((plugin, point.value, profile))

    def permit_wait(self, status: Code, seconds: float) -> None:
        self._permit_wait_duration.labels(status.label).observe(seconds)

    # ---------------------------------------------------------- preemption
    def preemption_attempt(self) -> None:
        self._preemption_attempts.inc()

    def preemption_victims(self, count: int) -> None:
        self._preemption_victims.observe(count)

    # ------------------------------------------------------ API client
    def rest_request(self, method: str, host: str, code: str, seconds: float) -> None:
        """One API request answered with ``code`` ("<error>" without an answer)."""
        self._child(self._rest_requests, code, method, host).inc()
        self._child(self._rest_duration, method, host).observe(seconds)

    def rate_limiter_wait(self, verb: str, host: str, seconds: float) -> None:
        """A request waited ``seconds`` for the client-side rate limiter."""
        self._child(self._rest_limiter, verb, host).observe(seconds)

    def resourceclaim_create(self, status: str) -> None:
        """``scheduler_resourceclaim_creates_total{status}`` (success, failure)."""
        self._resourceclaim_creates.labels(status).inc()

    def volume_scheduling_stage_error(self, operation: str) -> None:
        self._child(self._volume_stage_errors, operation).inc()

    def binding_conditions(self, profile: str, driver: str, status: str, seconds: float) -> None:
        """One PreBind wait for binding conditions (success, failed, timeout, error)."""
        self._binding_conditions_wait.labels(profile, driver, status).observe(seconds)
        self._binding_conditions_allocations.labels(profile, driver, status).inc()

    def leader_election(self, lease: str, is_leader: Callable[[], bool]) -> None:
        """``leader_election_master_status{name}``, read from ``is_leader`` on scrape."""
        self._leader.labels(lease).set_function(lambda: 1.0 if is_leader() else 0.0)

    def leader_election_slowpath(self, lease: str) -> None:
        """``leader_election_slowpath_total{name}``: a renewal that had to GET."""
        self._child(self._leader_slowpath, lease).inc()

    # ------------------------------------------------------ housekeeping
    def cache_size(self, kind: CacheType, count: int) -> None:
        self._cache_size.labels(kind.value).set(count)

    def goroutines(self, operation: str, delta: int) -> None:
        """Running tasks doing ``operation`` (an ``Operation`` or an ``ExtensionPoint``)."""
        self._child(self._goroutines, operation).inc(delta)

    def bind_concurrency_limit(self, limit: int) -> None:
        """``pyscheduler_binding_concurrency_limit``: the limit now (0: unbounded)."""
        self._bind_concurrency_limit.set(limit)

    def event_handling(self, event: str, seconds: float) -> None:
        """An informer event handler for ``event`` (a ``ClusterEvent.label``) took ``seconds``."""
        self._child(self._event_handling_duration, event).observe(seconds)
