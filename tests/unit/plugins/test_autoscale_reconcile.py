"""Reconcile metrics as Neon exports them (issue 25): the bookkeeping
(``reconcile``), the authority counting every forwarded event, and the
exported families with Neon's names, labels, types and buckets
(``pkg/plugin/metrics/reconcile.go``)."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from plugins.autoscale_enforcer.authority import Authority, Event, Nodes
from plugins.autoscale_enforcer.metrics import ReconcileMetrics
from plugins.autoscale_enforcer.reconcile import (
    BUCKETS,
    Observations,
    Outcome,
    ReconcileBook,
    ReconcileTotals,
)
from tests.support.builders import make_node, make_pod
from tests.unit.plugins.autoscale_support import make_config


class Channel:
    immediate = True

    def __init__(self) -> None:
        self.sent: list[object] = []

    def send(self, message: object) -> None:
        self.sent.append(message)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_buckets_are_neons() -> None:
    assert BUCKETS == (
        0.00001, 0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75,
        1.0, 2.5, 5.0, 10.0, 20.0, 45.0,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("value", "bucket"),
    [
        pytest.param(0.0, 0, id="zero: the first bucket"),
        pytest.param(0.00001, 0, id="on a bound: that bucket (le)"),
        pytest.param(0.003, 3, id="between bounds: the next one up"),
        pytest.param(45.0, 15, id="the last bound"),
        pytest.param(46.0, 16, id="above every bound: +Inf"),
    ],
)
def test_observations_fall_in_prometheus_le_buckets(value: float, bucket: int) -> None:
    observations = Observations()
    observations.observe(value)
    assert observations.counts.index(1) == bucket
    assert observations.cumulative()[-1] == ("+Inf", 1.0)


def test_a_failing_object_counts_until_it_succeeds_or_is_deleted() -> None:
    book = ReconcileBook()
    assert book.take() is None
    book.done("pods", "default/a", wait=0.002, duration=0.001, failed=True, deleted=False)
    book.done("pods", "default/b", wait=None, duration=0.001, failed=True, deleted=False)
    book.done("nodes", "n1", wait=0.002, duration=0.0, failed=False, deleted=False)
    report = book.take()
    assert report is not None
    assert report.failing == {"Pod": 2, "Node": 0}
    assert report.panics == {"Pod": 2}
    assert report.waits.count == 2  # the event without a send time has no wait
    assert {k: v.count for k, v in report.durations.items()} == {
        ("Pod", Outcome.FAILURE): 2,
        ("Node", Outcome.SUCCESS): 1,
    }
    assert book.take() is None  # handed over
    book.done("pods", "default/a", wait=0.0, duration=0.0, failed=False, deleted=False)
    book.done("pods", "default/b", wait=0.0, duration=0.0, failed=True, deleted=True)
    report = book.take()
    assert report is not None
    assert report.failing == {"Pod": 0, "Node": 0}
    assert report.panics == {"Pod": 1}


def test_the_authority_counts_every_forwarded_event_by_kind_and_outcome() -> None:
    channel, clock = Channel(), Clock()
    authority = Authority(channel, clock)  # type: ignore[arg-type]
    node = make_node("n1").allocatable(cpu="8", memory="8Gi", pods="110").obj()
    authority.receive(Event("nodes", node, sent=99.5))  # waited 0.5 s
    authority.receive(Event("pods", make_pod("p").node("n1").obj(), sent=100.0))

    def broken(resource: str, old: Any, new: Any) -> None:
        raise RuntimeError("boom")

    authority._feed.changed = broken  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        authority.receive(Event("pods", make_pod("q").node("n1").obj(), sent=100.0))
    assert authority.idle() is None  # before Start: nothing goes out
    authority._feed.start(make_config())
    authority.idle()
    (message,) = channel.sent
    assert isinstance(message, Nodes)
    report = message.reconcile
    assert report is not None
    assert report.waits.count == 3
    assert report.waits.total == pytest.approx(0.5)
    assert {k: v.count for k, v in report.durations.items()} == {
        ("Node", Outcome.SUCCESS): 1,
        ("Pod", Outcome.SUCCESS): 1,
        ("Pod", Outcome.FAILURE): 1,
    }
    assert report.failing == {"Node": 0, "Pod": 1}
    assert report.panics == {"Pod": 1}


def test_exported_with_neons_names_labels_and_types() -> None:
    book = ReconcileBook()
    book.done(
        "virtualmachines", "default/vm", wait=0.02, duration=0.003, failed=False, deleted=False
    )
    book.done("pods", "default/p", wait=0.0, duration=0.0, failed=True, deleted=False)
    registry = CollectorRegistry()
    metrics = ReconcileMetrics()
    registry.register(metrics)
    report = book.take()
    assert report is not None
    metrics.add(report)
    text = generate_latest(registry).decode()
    sample = registry.get_sample_value
    assert "# TYPE autoscaling_plugin_reconcile_queue_wait_durations histogram" in text
    assert sample("autoscaling_plugin_reconcile_queue_wait_durations_bucket", {"le": "0.05"}) == 2
    assert sample("autoscaling_plugin_reconcile_queue_wait_durations_bucket", {"le": "0.01"}) == 1
    assert sample("autoscaling_plugin_reconcile_queue_wait_durations_count", {}) == 2
    assert "# TYPE autoscaling_plugin_reconcile_duration_seconds histogram" in text
    vm = {"kind": "VirtualMachine", "outcome": "success"}
    assert sample("autoscaling_plugin_reconcile_duration_seconds_count", vm) == 1
    pod = {"kind": "Pod", "outcome": "failure"}
    assert sample("autoscaling_plugin_reconcile_duration_seconds_count", pod) == 1
    assert "# TYPE autoscaling_plugin_reconcile_failing_objects gauge" in text
    assert sample("autoscaling_plugin_reconcile_failing_objects", {"kind": "Pod"}) == 1
    assert 'autoscaling_plugin_reconcile_panics_count{kind="Pod"} 1.0' in text  # no _total
    metrics.restarted()
    assert sample("autoscaling_plugin_reconcile_failing_objects", {"kind": "Pod"}) == 0


def test_totals_add_reports_up() -> None:
    totals, book = ReconcileTotals(), ReconcileBook()
    for _ in range(2):
        book.done("pods", "default/p", wait=0.1, duration=0.1, failed=True, deleted=False)
        report = book.take()
        assert report is not None
        totals.add(report)
    assert totals.panics == {"Pod": 2}
    assert totals.failing == {"Pod": 1}
    assert totals.waits.count == 2
