"""Events that arrive while a pod is being scheduled are replayed when it fails."""

from __future__ import annotations

import pytest

from scheduler.framework import ClusterEvent, EventResource, QueuedPodInfo
from scheduler.framework.events import ActionType
from scheduler.queue import QueueName
from scheduler.queue.inflight import InFlight
from tests.unit.queue.fakes import (
    NODE_ADD,
    NODE_LABEL,
    QUEUE,
    SKIP,
    RecordingMetrics,
    fail,
    make_queue,
    on,
    pod,
    pop,
    where,
)

EVENTS = {"Fit": [on(NODE_ADD, QUEUE), on(NODE_LABEL, SKIP)], "Dra": [on(NODE_ADD, QUEUE)]}


@pytest.mark.parametrize(
    ("events_in_flight", "unschedulable", "pending", "expected"),
    [
        pytest.param([], ["Fit"], [], QueueName.UNSCHEDULABLE, id="nothing happened"),
        pytest.param([NODE_ADD], ["Fit"], [], QueueName.BACKOFF, id="helpful event: backoff"),
        pytest.param([NODE_LABEL], ["Fit"], [], QueueName.UNSCHEDULABLE, id="hint says skip"),
        pytest.param(
            [NODE_LABEL, NODE_ADD], ["Fit"], [], QueueName.BACKOFF, id="any helpful event counts"
        ),
        pytest.param([NODE_ADD], [], ["Dra"], QueueName.ACTIVE, id="Pending plugin: active"),
        pytest.param([NODE_ADD], [], [], QueueName.BACKOFF, id="error: backoff regardless"),
    ],
)
def test_events_during_the_attempt_decide_where_the_pod_goes(
    events_in_flight: list[ClusterEvent],
    unschedulable: list[str],
    pending: list[str],
    expected: QueueName,
) -> None:
    queue = make_queue(events=EVENTS)
    queue.add(pod("p"))
    pinfo = pop(queue)
    for event in events_in_flight:
        queue.move_all_to_active_or_backoff(event, None, None)
    fail(queue, pinfo, *unschedulable, pending=pending)
    assert where(queue, "p") == expected


def test_events_before_the_pop_are_not_replayed() -> None:
    queue = make_queue(events=EVENTS)
    queue.add(pod("first"))
    queue.add(pod("second"))
    first = pop(queue)
    queue.move_all_to_active_or_backoff(NODE_ADD, None, None)  # first is in flight
    second = pop(queue)
    fail(queue, second, "Fit")
    fail(queue, first, "Fit")
    assert (where(queue, "first"), where(queue, "second")) == (
        QueueName.BACKOFF,
        QueueName.UNSCHEDULABLE,
    )


def test_update_of_the_pod_in_flight_is_replayed() -> None:
    label_update = ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_LABEL)
    queue = make_queue(events={"Affinity": [on(label_update, QUEUE)]})
    queue.add(pod("p"))
    pinfo = pop(queue)
    queue.update(pinfo.pod, pod("p", lambda b: b.label("app", "web")))
    assert where(queue, "p") is None, "an in-flight pod is not re-added by its update"
    fail(queue, pinfo, "Affinity")
    assert where(queue, "p") == QueueName.BACKOFF


def test_activate_of_a_pod_in_flight_requeues_it_when_it_fails() -> None:
    queue = make_queue(events={"Fit": [on(NODE_ADD, SKIP)]})
    queue.add(pod("p"))
    queue.add(pod("other"))
    pinfo, other = pop(queue), pop(queue)
    queue.activate([pinfo.pod])
    fail(queue, other, "Fit")
    fail(queue, pinfo, "Fit")
    assert where(queue, "p") == QueueName.BACKOFF
    assert where(queue, "other") == QueueName.UNSCHEDULABLE, "ForceActivate targeted another pod"


def test_events_are_dropped_once_no_pod_needs_them() -> None:
    metrics = RecordingMetrics()
    tracker = InFlight(metrics)
    assert not tracker.record(NODE_ADD, None, None), "nobody in flight: not kept"
    a, b = pod("a"), pod("b")
    tracker.start(QueuedPodInfo(a, 0.0))
    tracker.record(NODE_ADD, None, None)
    tracker.start(QueuedPodInfo(b, 0.0))
    tracker.record(NODE_LABEL, None, None)
    assert [e.event for e in tracker.events_since_pop(b.uid) or []] == [NODE_LABEL]
    tracker.done(b.uid)
    assert tracker.event_count() == 2, "a still needs both"
    tracker.done(a.uid)
    assert tracker.event_count() == 0
    assert all(count == 0 for count in metrics.inflight.values())
    assert tracker.events_since_pop(a.uid) is None
