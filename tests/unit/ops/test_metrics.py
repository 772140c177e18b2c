"""SchedulerMetrics: the exposition matches upstream names, types, labels and buckets."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from scheduler.framework.interfaces import ExtensionPoint
from scheduler.framework.status import Code
from scheduler.ops.metrics import (
    BUILD_INFO_LABELS,
    AttemptResult,
    CacheType,
    HintResult,
    Operation,
    QueueName,
    SchedulerMetrics,
    attempts_label,
    exponential_buckets,
)

PROFILE = "default-scheduler"
REST_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0]
Record = Callable[[SchedulerMetrics], None]


def exp(start: float, factor: float, count: int) -> list[float]:
    """Bucket bounds as exposed, including +Inf."""
    return [start * factor**i for i in range(count)] + [float("inf")]


@dataclass(frozen=True)
class Spec:
    name: str
    type: str
    labels: frozenset[str]
    buckets: list[float] | None
    record: Record


def spec(
    name: str,
    kind: str,
    labels: tuple[str, ...],
    record: Record,
    buckets: list[float] | None = None,
) -> Spec:
    return Spec(name, kind, frozenset(labels), buckets, record)


SPECS = [
    spec(
        "scheduler_schedule_attempts_total",
        "counter",
        ("result", "profile"),
        lambda m: m.attempt(AttemptResult.SCHEDULED, PROFILE, 0.01),
    ),
    spec(
        "scheduler_scheduling_attempt_duration_seconds",
        "histogram",
        ("result", "profile"),
        lambda m: m.attempt(AttemptResult.ERROR, PROFILE, 0.01),
        exp(0.001, 2, 15),
    ),
    spec(
        "scheduler_scheduling_algorithm_duration_seconds",
        "histogram",
        (),
        lambda m: m.algorithm(0.002),
        exp(0.001, 2, 15),
    ),
    spec(
        "scheduler_pod_scheduling_sli_duration_seconds",
        "histogram",
        ("attempts",),
        lambda m: m.sli(3, 1.5),
        exp(0.01, 2, 20),
    ),
    spec(
        "scheduler_pod_scheduling_attempts",
        "histogram",
        (),
        lambda m: m.pod_attempts(2),
        exp(1, 2, 5),
    ),
    spec(
        "scheduler_pending_pods",
        "gauge",
        ("queue",),
        lambda m: m.pending(QueueName.ACTIVE, 3),
    ),
    spec(
        "scheduler_queue_incoming_pods_total",
        "counter",
        ("queue", "event"),
        lambda m: m.incoming(QueueName.BACKOFF, "NodeAdd"),
    ),
    spec(
        "scheduler_unschedulable_pods",
        "gauge",
        ("plugin", "profile"),
        lambda m: m.unschedulable_plugin("NodeResourcesFit", PROFILE, 1),
    ),
    spec(
        "scheduler_framework_extension_point_duration_seconds",
        "histogram",
        ("extension_point", "status", "profile"),
        lambda m: m.extension_point(ExtensionPoint.FILTER, Code.SUCCESS, PROFILE, 0.001),
        exp(0.0001, 2, 12),
    ),
    spec(
        "scheduler_plugin_execution_duration_seconds",
        "histogram",
        ("plugin", "extension_point", "status"),
        lambda m: m.plugin_execution("TaintToleration", ExtensionPoint.SCORE, Code.SUCCESS, 1e-4),
        exp(0.00001, 1.5, 20),
    ),
    spec(
        "scheduler_plugin_evaluation_total",
        "counter",
        ("plugin", "extension_point", "profile"),
        lambda m: m.plugin_evaluation("NodeAffinity", ExtensionPoint.PRE_FILTER, PROFILE),
    ),
    spec(
        "scheduler_permit_wait_duration_seconds",
        "histogram",
        ("result",),
        lambda m: m.permit_wait(Code.SUCCESS, 0.5),
        exp(0.001, 2, 15),
    ),
    spec(
        "scheduler_cache_size",
        "gauge",
        ("type",),
        lambda m: m.cache_size(CacheType.NODES, 5),
    ),
    spec(
        "scheduler_goroutines",
        "gauge",
        ("operation",),
        lambda m: m.goroutines(Operation.BINDING, 1),
    ),
    spec(
        "scheduler_event_handling_duration_seconds",
        "histogram",
        ("event",),
        lambda m: m.event_handling("NodeAdd", 0.0002),
        exp(0.0001, 2, 12),
    ),
    spec(
        "scheduler_queueing_hint_execution_duration_seconds",
        "histogram",
        ("plugin", "event", "hint"),
        lambda m: m.hint("NodeAffinity", "NodeAdd", HintResult.QUEUE, 0.00002),
        exp(0.00001, 1.5, 20),
    ),
    spec(
        "scheduler_inflight_events",
        "gauge",
        ("event",),
        lambda m: m.inflight_events("PodPopped", 1),
    ),
    spec(
        "scheduler_pod_scheduled_after_flush_total",
        "counter",
        (),
        lambda m: m.scheduled_after_flush(),
    ),
    spec(
        "scheduler_preemption_attempts_total",
        "counter",
        (),
        lambda m: m.preemption_attempt(),
    ),
    spec(
        "scheduler_preemption_victims",
        "histogram",
        (),
        lambda m: m.preemption_victims(2),
        exp(1, 2, 7),
    ),
    spec(
        "scheduler_resourceclaim_creates_total",
        "counter",
        ("status",),
        lambda m: m.resourceclaim_create("success"),
    ),
    spec(
        "scheduler_dra_bindingconditions_wait_duration_seconds",
        "histogram",
        ("profile", "driver", "status"),
        lambda m: m.binding_conditions("p", "gpu.example.com", "success", 5.0),
        exp(0.1, 2, 14),
    ),
    spec(
        "scheduler_dra_bindingconditions_allocations_total",
        "counter",
        ("profile", "driver", "status"),
        lambda m: m.binding_conditions("p", "gpu.example.com", "success", 5.0),
    ),
    spec(
        "leader_election_master_status",
        "gauge",
        ("name",),
        lambda m: m.leader_election("pyscheduler", lambda: True),
    ),
    # VolumeBinding's own families.
    spec(
        "scheduler_volume_scheduling_stage_error_total",
        "counter",
        ("operation",),
        lambda m: m.volume_scheduling_stage_error("bind"),
    ),
    # component-base's build info and feature gates.
    spec(
        "kubernetes_build_info",
        "gauge",
        BUILD_INFO_LABELS,
        lambda m: m.build_info({"git_version": "v0.1.0"}),
    ),
    spec(
        "kubernetes_feature_enabled",
        "gauge",
        ("name", "stage"),
        lambda m: m.feature_gates({"NodeDeclaredFeatures": (True, "BETA")}),
    ),
    # Ours (not upstream's): the event loop's lag.
    spec(
        "pyscheduler_event_loop_lag_seconds",
        "histogram",
        (),
        lambda m: m.loop_lag(0.01, 0.01),
        [0.001 * 2**i for i in range(14)] + [float("inf")],
    ),
    spec(
        "pyscheduler_event_loop_longest_stall_seconds",
        "gauge",
        (),
        lambda m: m.loop_lag(0.01, 0.5),
    ),
    # Ours: the adaptive bind limit.
    spec(
        "pyscheduler_binding_concurrency_limit",
        "gauge",
        (),
        lambda m: m.bind_concurrency_limit(16),
    ),
    spec(
        "leader_election_slowpath_total",
        "counter",
        ("name",),
        lambda m: m.leader_election_slowpath("pyscheduler"),
    ),
    # client-go's rest client metrics (component-base restclient).
    spec(
        "rest_client_requests_total",
        "counter",
        ("code", "method", "host"),
        lambda m: m.rest_request("GET", "127.0.0.1:6443", "200", 0.01),
    ),
    spec(
        "rest_client_request_duration_seconds",
        "histogram",
        ("verb", "host"),
        lambda m: m.rest_request("GET", "127.0.0.1:6443", "200", 0.01),
        [*REST_BUCKETS, float("inf")],
    ),
    spec(
        "rest_client_rate_limiter_duration_seconds",
        "histogram",
        ("verb", "host"),
        lambda m: m.rate_limiter_wait("POST", "127.0.0.1:6443", 0.01),
        [*REST_BUCKETS, float("inf")],
    ),
]
METRICS = [pytest.param(s, id=s.name) for s in SPECS]
# Declared with no series ever recorded, as upstream 1.36 (VolumeBinding's
# binder cache counter is registered but never counted).
DECLARED_ONLY = {"scheduler_volume_binder_cache_requests_total": "counter"}
# The process and runtime collectors' families (prometheus_client's names).
RUNTIME_FAMILIES = {
    "process_cpu_seconds_total": "counter",
    "process_resident_memory_bytes": "gauge",
    "process_virtual_memory_bytes": "gauge",
    "process_start_time_seconds": "gauge",
    "process_open_fds": "gauge",
    "process_max_fds": "gauge",
    "python_info": "gauge",
    "python_gc_objects_collected_total": "counter",
    "python_gc_objects_uncollectable_total": "counter",
    "python_gc_collections_total": "counter",
}


def exposition(registry: CollectorRegistry) -> str:
    return generate_latest(registry).decode()


def declared_types(text: str) -> dict[str, str]:
    """``# TYPE name type`` lines: the names exactly as exposed."""
    types = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            types[name] = kind
    return types


def samples_of(text: str, name: str) -> list[Sample]:
    own = {name, f"{name}_bucket", f"{name}_sum", f"{name}_count"}
    return [
        sample
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name in own
    ]


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def metrics(registry: CollectorRegistry) -> SchedulerMetrics:
    return SchedulerMetrics(registry)


def test_exposes_exactly_the_upstream_metric_names(
    registry: CollectorRegistry, metrics: SchedulerMetrics
) -> None:
    for each in SPECS:
        each.record(metrics)

    types = declared_types(exposition(registry))

    assert types == {each.name: each.type for each in SPECS} | RUNTIME_FAMILIES | DECLARED_ONLY


@pytest.mark.parametrize("expected", METRICS)
def test_metric_has_upstream_type_labels_and_buckets(
    registry: CollectorRegistry, metrics: SchedulerMetrics, expected: Spec
) -> None:
    expected.record(metrics)
    text = exposition(registry)

    samples = samples_of(text, expected.name)

    assert declared_types(text)[expected.name] == expected.type
    assert samples, f"no samples for {expected.name}"
    assert {frozenset(s.labels) - {"le"} for s in samples} == {expected.labels}
    if expected.buckets is not None:
        bounds = [float(s.labels["le"]) for s in samples if s.name.endswith("_bucket")]
        assert bounds == pytest.approx(expected.buckets)


def test_registers_on_the_registry_passed_in_only() -> None:
    first, second = CollectorRegistry(), CollectorRegistry()
    SchedulerMetrics(first).preemption_attempt()
    SchedulerMetrics(second)

    assert first.get_sample_value("scheduler_preemption_attempts_total") == 1.0
    assert second.get_sample_value("scheduler_preemption_attempts_total") == 0.0
    assert REGISTRY.get_sample_value("scheduler_preemption_attempts_total") is None


def test_exposes_no_created_series(registry: CollectorRegistry, metrics: SchedulerMetrics) -> None:
    metrics.attempt(AttemptResult.SCHEDULED, PROFILE, 0.1)
    metrics.preemption_victims(1)

    assert "_created" not in exposition(registry)


@pytest.mark.parametrize(
    ("attempts", "label"),
    [
        pytest.param(1, "1", id="first attempt"),
        pytest.param(14, "14", id="last exact count"),
        pytest.param(15, "15+", id="cap"),
        pytest.param(40, "15+", id="beyond cap"),
    ],
)
def test_sli_attempts_label(
    registry: CollectorRegistry, metrics: SchedulerMetrics, attempts: int, label: str
) -> None:
    metrics.sli(attempts, 2.0)

    assert attempts_label(attempts) == label
    assert (
        registry.get_sample_value(
            "scheduler_pod_scheduling_sli_duration_seconds_count", {"attempts": label}
        )
        == 1.0
    )


@dataclass(frozen=True)
class Expect:
    sample: str
    labels: dict[str, str]
    value: float


@pytest.mark.parametrize(
    ("record", "expect"),
    [
        pytest.param(
            lambda m: [m.incoming(QueueName.ACTIVE, "PodAdd") for _ in range(2)],
            Expect(
                "scheduler_queue_incoming_pods_total", {"queue": "active", "event": "PodAdd"}, 2
            ),
            id="incoming counts",
        ),
        pytest.param(
            lambda m: [m.pending(QueueName.GATED, n) for n in (4, 1)],
            Expect("scheduler_pending_pods", {"queue": "gated"}, 1),
            id="pending is set, not added",
        ),
        pytest.param(
            lambda m: [m.unschedulable_plugin("NodeAffinity", PROFILE, d) for d in (1, 1, -1)],
            Expect(
                "scheduler_unschedulable_pods", {"plugin": "NodeAffinity", "profile": PROFILE}, 1
            ),
            id="unschedulable plugin moves by delta",
        ),
        pytest.param(
            lambda m: [m.inflight_events("NodeAdd", d) for d in (1, 1, 1, -2)],
            Expect("scheduler_inflight_events", {"event": "NodeAdd"}, 1),
            id="inflight events move by delta",
        ),
        pytest.param(
            lambda m: m.hint("NodeAffinity", "NodeAdd", HintResult.QUEUE_SKIP, 0.001),
            Expect(
                "scheduler_queueing_hint_execution_duration_seconds_count",
                {"plugin": "NodeAffinity", "event": "NodeAdd", "hint": "QueueSkip"},
                1,
            ),
            id="hint duration",
        ),
        pytest.param(
            lambda m: m.extension_point(
                ExtensionPoint.PRE_FILTER, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, PROFILE, 0.01
            ),
            Expect(
                "scheduler_framework_extension_point_duration_seconds_count",
                {
                    "extension_point": "PreFilter",
                    "status": "UnschedulableAndUnresolvable",
                    "profile": PROFILE,
                },
                1,
            ),
            id="extension point uses upstream code spelling",
        ),
        pytest.param(
            lambda m: m.attempt(AttemptResult.UNSCHEDULABLE, PROFILE, 0.2),
            Expect(
                "scheduler_schedule_attempts_total",
                {"result": "unschedulable", "profile": PROFILE},
                1,
            ),
            id="attempt result",
        ),
        pytest.param(
            lambda m: m.permit_wait(Code.UNSCHEDULABLE, 3),
            Expect("scheduler_permit_wait_duration_seconds_sum", {"result": "Unschedulable"}, 3),
            id="permit wait by status code",
        ),
        pytest.param(
            lambda m: [m.goroutines(ExtensionPoint.FILTER, d) for d in (1, 1, -1)],
            Expect("scheduler_goroutines", {"operation": "Filter"}, 1),
            id="goroutines by operation",
        ),
        pytest.param(
            lambda m: m.cache_size(CacheType.ASSUMED_PODS, 7),
            Expect("scheduler_cache_size", {"type": "assumed_pods"}, 7),
            id="cache size",
        ),
    ],
)
def test_recording(
    registry: CollectorRegistry, metrics: SchedulerMetrics, record: Record, expect: Expect
) -> None:
    record(metrics)

    assert registry.get_sample_value(expect.sample, expect.labels) == expect.value


@pytest.mark.parametrize(
    "args",
    [
        pytest.param((0.0, 2.0, 3), id="zero start"),
        pytest.param((1.0, 1.0, 3), id="factor one"),
        pytest.param((1.0, 2.0, 0), id="no buckets"),
    ],
)
def test_exponential_buckets_rejects(args: tuple[float, float, int]) -> None:
    with pytest.raises(ValueError, match="invalid exponential buckets"):
        exponential_buckets(*args)
