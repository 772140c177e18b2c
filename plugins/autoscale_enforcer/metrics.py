"""The ``autoscaling_plugin_*`` metrics, registered on the daemon's registry.

Counters are updated where things happen; the per-node resource gauges are
read from the state at scrape time by a collector, so they can never drift
from it. Labels come from the constants here, never retyped.

| metric | type | labels |
| --- | --- | --- |
| ``autoscaling_plugin_extension_calls_total`` | counter | method |
| ``autoscaling_plugin_extension_call_fails_total`` | counter | method, status |
| ``autoscaling_plugin_resource_requests_total`` | counter | code |
| ``autoscaling_plugin_resource_requests_results_total`` | counter | code, node |
| ``autoscaling_plugin_node_cpu_resources_current`` (cores) | gauge | node, <labels>, field |
| ``autoscaling_plugin_node_mem_resources_current`` (bytes) | gauge | node, <labels>, field |
| ``autoscaling_plugin_migrations_created_total`` | counter | |
| ``autoscaling_plugin_migration_create_fails_total`` | counter | |
| ``autoscaling_plugin_migrations_deleted_total`` | counter | phase |
| ``autoscaling_plugin_migration_delete_fails_total`` | counter | phase |
| ``autoscaling_plugin_reserve_should_deny_total`` | counter | node, <labels> |
| ``autoscaling_plugin_config_rejected_total`` | counter | |
| ``autoscaling_plugin_k8s_ops_total`` | counter | op, kind, outcome |
| ``autoscaling_plugin_reconcile_queue_wait_durations`` (s) | histogram | |
| ``autoscaling_plugin_reconcile_duration_seconds`` | histogram | kind, outcome |
| ``autoscaling_plugin_reconcile_failing_objects`` | gauge | kind |
| ``autoscaling_plugin_reconcile_panics_count`` | untyped (a counter) | kind |

``<labels>``: ``nodeMetricLabels``' metric label names in order (Neon's
``buildNodeLabels``), valued from the node's labels ("" when absent).

``k8s_ops_total`` is Neon's (``RecordK8sOp``, v0.42+): one per API call the
plugin makes, ``outcome`` ``success`` or ``error: <message>`` with the
object's name replaced by ``<name>``.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from plugins.autoscale_enforcer.reconcile import ReconcileReport, ReconcileTotals
from plugins.autoscale_enforcer.state import Amounts, NodeState, State

PREFIX = "autoscaling_plugin"


class Method(enum.StrEnum):
    FILTER = "Filter"
    SCORE = "Score"
    NORMALIZE_SCORE = "NormalizeScore"
    RESERVE = "Reserve"
    UNRESERVE = "Unreserve"


class Field(enum.StrEnum):
    TOTAL = "Total"
    RESERVED = "Reserved"
    BUFFER = "Buffer"
    WATERMARK = "Watermark"
    CAPACITY_PRESSURE = "CapacityPressure"
    PRESSURE_ACCOUNTED_FOR = "PressureAccountedFor"
    MIGRATING = "Migrating"


def _fields(node: NodeState) -> dict[Field, Amounts]:
    return {
        Field.TOTAL: node.total,
        Field.RESERVED: node.reserved,
        Field.BUFFER: node.buffer,
        Field.WATERMARK: node.watermark,
        Field.CAPACITY_PRESSURE: node.pressure,
        Field.PRESSURE_ACCOUNTED_FOR: node.pressure_accounted_for,
        Field.MIGRATING: node.migrating,
    }


NodeLabels = Callable[[str], Mapping[str, str]]  # node name -> its labels ({} if unknown)


def _metric_labels(state: State | None) -> tuple[tuple[str, str], ...]:
    """(metric label, node label key) pairs of ``nodeMetricLabels``, in order."""
    return () if state is None else state.config.metric_labels()


def _label_values(pairs: tuple[tuple[str, str], ...], labels: Mapping[str, str]) -> list[str]:
    return [labels.get(key, "") for _, key in pairs]


class NodeGauges(Collector):
    """Per-node gauges read from the state at scrape time, with the node's
    ``nodeMetricLabels`` read from its labels then (so a relabelled node's
    old series go at once, as Neon's ``Node.Update`` removes them)."""

    def __init__(
        self, state: Callable[[], State | None], lock: threading.Lock, node_labels: NodeLabels
    ) -> None:
        self._state = state
        self._lock = lock
        self._node_labels = node_labels

    def collect(self) -> Iterator[GaugeMetricFamily]:
        with self._lock:  # a consistent reading (agents change nodes from their thread)
            state = self._state()
            pairs = _metric_labels(state)
            nodes = [
                (node.name, _fields(node))
                for node in (() if state is None else state.nodes.values())
                if node.budget is not None
            ]
        names = ["node", *(name for name, _ in pairs), "field"]
        cpu = GaugeMetricFamily(
            f"{PREFIX}_node_cpu_resources_current",
            "Node CPU (cores) by field, as the AutoscaleEnforcer accounts it",
            labels=names,
        )
        mem = GaugeMetricFamily(
            f"{PREFIX}_node_mem_resources_current",
            "Node memory (bytes) by field, as the AutoscaleEnforcer accounts it",
            labels=names,
        )
        for name, fields in nodes:
            common = [name, *_label_values(pairs, self._node_labels(name))]
            for field, amounts in fields.items():
                cpu.add_metric([*common, field], amounts.cpu / 1000)
                mem.add_metric([*common, field], amounts.mem)
        yield cpu
        yield mem


class ReserveShouldDeny(Collector):
    """``autoscaling_plugin_reserve_should_deny_total{node, <nodeMetricLabels>}``:
    counted on the event loop with the node's labels at that moment (as
    Neon's ``IncReserveOverBudget``); the label names come from the config,
    which cannot change them at runtime."""

    def __init__(self, state: Callable[[], State | None], node_labels: NodeLabels) -> None:
        self._state = state
        self._node_labels = node_labels
        self.counts: dict[tuple[str, ...], int] = {}

    def inc(self, node: str) -> None:
        pairs = _metric_labels(self._state())
        key = (node, *_label_values(pairs, self._node_labels(node)))
        self.counts[key] = self.counts.get(key, 0) + 1

    def collect(self) -> Iterator[CounterMetricFamily]:
        pairs = _metric_labels(self._state())
        family = CounterMetricFamily(
            f"{PREFIX}_reserve_should_deny",
            "Reserve calls for a pod that does not fit",
            labels=["node", *(name for name, _ in pairs)],
        )
        for key, count in list(self.counts.items()):
            family.add_metric(list(key), count)
        yield family


class ExtensionCalls(Collector):
    """``autoscaling_plugin_extension_calls_total`` from plain per-method counts.

    Filter and Score count a call per node per cycle: too often for a
    ``Counter`` child, whose every ``inc`` takes a lock. Only the daemon's
    event-loop thread calls the extension points, so only it increments
    ``counts``; a scrape (another thread) reads whole ints."""

    def __init__(self) -> None:
        self.counts: dict[Method, int] = dict.fromkeys(Method, 0)

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            f"{PREFIX}_extension_calls", "Calls to the plugin's extension points", labels=["method"]
        )
        for method, count in list(self.counts.items()):
            family.add_metric([method], count)
        yield family


class ReconcileMetrics(Collector):
    """Neon's reconcile metrics (``metrics/reconcile.go``) from the
    authority's reports (see ``reconcile``). ``reconcile_panics_count`` keeps
    Neon's name, which has no ``_total``: prometheus_client writes a counter
    as ``<name>_total``, so it is exported untyped under that exact name."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # reports come on the loop, scrapes elsewhere
        self._totals = ReconcileTotals()

    def add(self, report: ReconcileReport) -> None:
        with self._lock:
            self._totals.add(report)

    def restarted(self) -> None:
        with self._lock:
            self._totals.restarted()

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            totals = self._totals
            waits = (totals.waits.cumulative(), totals.waits.total)
            durations = [
                (kind, outcome, observations.cumulative(), observations.total)
                for (kind, outcome), observations in sorted(totals.durations.items())
            ]
            failing = sorted(totals.failing.items())
            panics = sorted(totals.panics.items())
        wait = HistogramMetricFamily(
            f"{PREFIX}_reconcile_queue_wait_durations",
            "Duration that items in the reconcile queue are waiting to be picked up",
            buckets=waits[0],
            sum_value=waits[1],
        )
        yield wait
        duration = HistogramMetricFamily(
            f"{PREFIX}_reconcile_duration_seconds",
            "Duration that items take to be reconciled",
            labels=["kind", "outcome"],
        )
        for kind, outcome, buckets, total in durations:
            duration.add_metric([kind, outcome], buckets, total)
        yield duration
        failing_family = GaugeMetricFamily(
            f"{PREFIX}_reconcile_failing_objects",
            "Number of objects currently failing to be reconciled",
            labels=["kind"],
        )
        for kind, count in failing:
            failing_family.add_metric([kind], count)
        yield failing_family
        name = f"{PREFIX}_reconcile_panics_count"
        panic_family = Metric(name, "Number of times reconcile operations have panicked", "unknown")
        for kind, count in panics:
            panic_family.add_sample(name, {"kind": kind}, count)
        yield panic_family


class AutoscaleMetrics:
    def __init__(
        self,
        registry: CollectorRegistry,
        state: Callable[[], State | None],
        lock: threading.Lock,
        node_labels: NodeLabels = lambda name: {},
    ) -> None:
        def counter(name: str, doc: str, labels: tuple[str, ...] = ()) -> Counter:
            return Counter(f"{PREFIX}_{name}", doc, labels, registry=registry)

        self.extension_calls = ExtensionCalls()
        registry.register(self.extension_calls)
        self.calls = self.extension_calls.counts  # calls[method] += 1, loop thread only
        self.extension_call_fails = counter(
            "extension_call_fails_total",
            "Extension point calls that failed (Unschedulable from Filter not counted)",
            ("method", "status"),
        )
        self.requests = counter(
            "resource_requests_total", "Agent API requests by HTTP status", ("code",)
        )
        self.request_results = counter(
            "resource_requests_results_total",
            "Agent API requests for known pods by HTTP status and node",
            ("code", "node"),
        )
        # Children bound once per label set: every agent request counts here.
        self._request_children: dict[int, Counter] = {}
        self._result_children: dict[tuple[int, str], Counter] = {}
        self.migrations_created = counter("migrations_created", "Migrations created")
        self.migration_create_fails = counter(
            "migration_create_fails", "Failed attempts to create a migration"
        )
        self.migrations_deleted = counter(
            "migrations_deleted", "Finished migrations deleted", ("phase",)
        )
        self.migration_delete_fails = counter(
            "migration_delete_fails", "Failed deletions of finished migrations", ("phase",)
        )
        self.reserve_should_deny = ReserveShouldDeny(state, node_labels)
        registry.register(self.reserve_should_deny)
        self.authority_restarts = counter(
            "agent_process_restarts", "Times the agent API's process was restarted after a loss"
        )
        self.k8s_ops = counter(
            "k8s_ops_total",
            "Number of k8s API requests and their outcome",
            ("op", "kind", "outcome"),
        )
        self.config_rejected = counter(
            "config_rejected", "ConfigMap updates rejected (the last good config stays)"
        )
        registry.register(NodeGauges(state, lock, node_labels))
        self.reconcile = ReconcileMetrics()
        registry.register(self.reconcile)

    def record_k8s_op(self, op: str, kind: str, name: str, error: BaseException | None) -> None:
        """Neon's ``RecordK8sOp``: the outcome label never carries the name."""
        if error is None:
            outcome = "success"
        else:
            message = getattr(error, "message", None) or str(error)
            outcome = "error: " + str(message).replace(name, "<name>")
        self.k8s_ops.labels(op, kind, outcome).inc()

    def count_request(self, status: int, node: str, count: int = 1) -> None:
        """``count`` agent requests answered ``status``; ``node`` is the pod's ("" if unknown)."""
        child = self._request_children.get(status)
        if child is None:
            child = self._request_children[status] = self.requests.labels(str(status))
        child.inc(count)
        if node:
            key = (status, node)
            result = self._result_children.get(key)
            if result is None:
                result = self._result_children[key] = self.request_results.labels(str(status), node)
            result.inc(count)
