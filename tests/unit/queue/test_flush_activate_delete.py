"""The 5-minute leftover flush, ForceActivate and delete."""

from __future__ import annotations

import pytest

from scheduler.queue import QueueName
from tests.support.clock import FakeClock
from tests.unit.queue.fakes import (
    NODE_ADD,
    SKIP,
    Gate,
    RecordingMetrics,
    fail,
    make_queue,
    on,
    pod,
    pop,
    rejected,
    where,
)


@pytest.mark.parametrize(
    ("waited", "expected"),
    [
        pytest.param(299.0, QueueName.UNSCHEDULABLE, id="under 5 minutes"),
        pytest.param(300.0, QueueName.UNSCHEDULABLE, id="exactly 5 minutes"),
        pytest.param(300.5, QueueName.ACTIVE, id="over 5 minutes"),
    ],
)
def test_leftover_flush_after_five_minutes(waited: float, expected: QueueName) -> None:
    clock = FakeClock()
    metrics = RecordingMetrics()
    queue = make_queue(clock, events={"Fit": [on(NODE_ADD, SKIP)]}, metrics=metrics)
    pinfo = rejected(queue, "p", "Fit")
    clock.advance(waited)
    queue.flush_unschedulable_leftover()
    assert where(queue, "p") == expected
    if expected is QueueName.ACTIVE:
        assert pinfo.was_flushed_from_unschedulable
        assert metrics.incoming_events[-1] == (QueueName.ACTIVE, "UnschedulableTimeout")


def test_leftover_flush_respects_remaining_backoff() -> None:
    clock = FakeClock()
    queue = make_queue(clock, max_in_unschedulable=0.5, max_backoff=100.0, initial_backoff=60.0)
    rejected(queue, "p", "Fit")
    clock.advance(1)
    queue.flush_unschedulable_leftover()
    assert where(queue, "p") == QueueName.BACKOFF


@pytest.mark.parametrize(
    "place",
    [
        pytest.param(QueueName.UNSCHEDULABLE, id="from the pool"),
        pytest.param(QueueName.BACKOFF, id="from backoff"),
    ],
)
def test_activate_moves_to_active(place: QueueName) -> None:
    metrics = RecordingMetrics()
    queue = make_queue(events={"Fit": [on(NODE_ADD)]}, metrics=metrics)
    queue.add(pod("p"))
    pinfo = pop(queue)
    if place is QueueName.BACKOFF:
        queue.move_all_to_active_or_backoff(NODE_ADD, None, None)
    fail(queue, pinfo, "Fit")
    assert where(queue, "p") == place
    queue.activate([pod("p")])
    assert where(queue, "p") == QueueName.ACTIVE
    assert metrics.incoming_events[-1] == (QueueName.ACTIVE, "ForceActivate")


def test_activate_ignores_unknown_and_active_pods() -> None:
    queue = make_queue()
    queue.add(pod("p"))
    queue.activate([pod("p"), pod("stranger")])
    assert where(queue, "p") == QueueName.ACTIVE
    assert len(queue) == 1


@pytest.mark.parametrize(
    "place",
    [
        pytest.param(QueueName.ACTIVE, id="active"),
        pytest.param(QueueName.BACKOFF, id="backoff"),
        pytest.param(QueueName.UNSCHEDULABLE, id="pool"),
        pytest.param(QueueName.GATED, id="gated"),
    ],
)
def test_delete_removes_from_every_sub_queue(place: QueueName) -> None:
    gate = Gate("Gate", closed={"default/p"} if place is QueueName.GATED else ())
    queue = make_queue(pre_enqueue=[gate])
    queue.add(pod("p"))
    if place in (QueueName.BACKOFF, QueueName.UNSCHEDULABLE):
        pinfo = pop(queue)
        fail(queue, pinfo, *(() if place is QueueName.BACKOFF else ("Fit",)))
    assert where(queue, "p") == place
    queue.delete(pod("p"))
    assert where(queue, "p") is None
    assert len(queue) == 0
    assert all(not pods for pods in queue.pending_pods().values())


def test_pod_deleted_in_flight_is_not_requeued() -> None:
    queue = make_queue()
    queue.add(pod("p"))
    pinfo = pop(queue)
    queue.delete(pinfo.pod)
    fail(queue, pinfo, "Fit")
    assert where(queue, "p") is None
    assert queue.in_flight_pods() == []
