"""Failure requeue: error vs unschedulable backoff, the pool, pop from backoffQ."""

from __future__ import annotations

import pytest

from scheduler.queue import QueueName
from tests.support.clock import FakeClock
from tests.unit.queue.fakes import (
    NODE_ADD,
    PROFILE,
    RecordingMetrics,
    fail,
    make_queue,
    on,
    pod,
    pop,
    rejected,
    where,
)


def test_error_goes_to_error_backoff_and_counts_errors() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add(pod("p"))
    pinfo = pop(queue)
    fail(queue, pinfo)  # no rejector: an error
    assert where(queue, "p") == QueueName.BACKOFF
    assert (pinfo.consecutive_errors_count, pinfo.unschedulable_count) == (1, 0)
    assert pinfo.backoff_expiration == 1001.0
    assert queue.pop_nowait() is None, "error backoff is never popped early"
    clock.set(1002.0)
    queue.flush_backoff_completed()
    assert where(queue, "p") == QueueName.ACTIVE


def test_rejection_without_event_waits_in_the_pool() -> None:
    queue = make_queue()
    pinfo = rejected(queue, "p", "Fit")
    assert where(queue, "p") == QueueName.UNSCHEDULABLE
    assert (pinfo.unschedulable_count, pinfo.consecutive_errors_count) == (1, 0)


def test_rejection_resets_the_error_count() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add(pod("p"))
    for _ in range(3):
        pinfo = pop(queue)
        fail(queue, pinfo)
        clock.advance(20)
        queue.flush_backoff_completed()
    assert pinfo.consecutive_errors_count == 3
    fail(queue, pop(queue), "Fit")
    assert (pinfo.consecutive_errors_count, pinfo.unschedulable_count) == (0, 1)


@pytest.mark.parametrize(
    ("failures", "backoff"),
    [
        pytest.param(1, 1.0, id="1s"),
        pytest.param(2, 2.0, id="2s"),
        pytest.param(3, 4.0, id="4s"),
        pytest.param(4, 8.0, id="8s"),
        pytest.param(5, 10.0, id="10s"),
        pytest.param(6, 10.0, id="10s again"),
    ],
)
def test_unschedulable_backoff_grows_with_each_rejection(failures: int, backoff: float) -> None:
    clock = FakeClock()
    queue = make_queue(clock, events={"Fit": [on(NODE_ADD)]})
    queue.add(pod("p"))
    for _ in range(failures):
        pinfo = pop(queue)
        failed_at = clock.now()
        queue.move_all_to_active_or_backoff(NODE_ADD, None, None)  # while in flight
        fail(queue, pinfo, "Fit")
        assert where(queue, "p") == QueueName.BACKOFF
        assert pinfo.backoff_expiration is not None
        clock.set(pinfo.backoff_expiration + 1.0)
        queue.flush_backoff_completed()
        assert where(queue, "p") == QueueName.ACTIVE
    assert pinfo.unschedulable_count == failures
    assert pinfo.backoff_expiration == failed_at + backoff


def test_pop_from_backoff_when_active_is_empty() -> None:
    metrics = RecordingMetrics()
    queue = make_queue(metrics=metrics, events={"Fit": [on(NODE_ADD)]})
    queue.add(pod("errored"))
    fail(queue, pop(queue))
    queue.add(pod("rejected"))
    rejected_pod = pop(queue)
    queue.move_all_to_active_or_backoff(NODE_ADD, None, None)
    fail(queue, rejected_pod, "Fit")
    assert (where(queue, "errored"), where(queue, "rejected")) == (QueueName.BACKOFF,) * 2
    assert pop(queue) is rejected_pod, "popped before its backoff completed"
    assert (QueueName.ACTIVE, "PopFromBackoffQ") in metrics.incoming_events
    assert queue.pop_nowait() is None, "the error backoff heap is never popped early"
    assert where(queue, "errored") == QueueName.BACKOFF


def test_no_pop_from_backoff_when_disabled() -> None:
    queue = make_queue(pop_from_backoff=False, events={"Fit": [on(NODE_ADD)]})
    queue.add(pod("p"))
    pinfo = pop(queue)
    queue.move_all_to_active_or_backoff(NODE_ADD, None, None)
    fail(queue, pinfo, "Fit")
    assert where(queue, "p") == QueueName.BACKOFF
    assert queue.pop_nowait() is None


def test_max_backoff_zero_sends_failures_straight_to_active() -> None:
    queue = make_queue(max_backoff=0.0)
    queue.add(pod("p"))
    fail(queue, pop(queue))
    assert where(queue, "p") == QueueName.ACTIVE


def test_rejector_gauge_follows_failures_and_pops() -> None:
    metrics = RecordingMetrics()
    queue = make_queue(metrics=metrics)
    pinfo = rejected(queue, "p", "Fit", "Ports")
    assert metrics.unschedulable[("Fit", PROFILE)] == 1
    assert metrics.unschedulable[("Ports", PROFILE)] == 1
    queue.activate([pinfo.pod])
    assert pop(queue) is pinfo
    assert pinfo.unschedulable_plugins == set(), "reset for the new attempt"
    assert metrics.unschedulable[("Fit", PROFILE)] == 0
    fail(queue, pinfo, "Fit")
    queue.delete(pinfo.pod)
    assert metrics.unschedulable[("Fit", PROFILE)] == 0


def test_failure_of_an_already_queued_pod_is_not_requeued_twice() -> None:
    queue = make_queue()
    queue.add(pod("p"))
    pinfo = pop(queue)
    queue.add(pod("p"))  # the informer re-delivered it
    fail(queue, pinfo, "Fit")
    assert where(queue, "p") == QueueName.ACTIVE
    assert queue.in_flight_pods() == []
