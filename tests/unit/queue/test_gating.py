"""PreEnqueue gating: gated pods wait in the pool; only their gate's events release them."""

from __future__ import annotations

from scheduler.framework import ClusterEvent, Pod, Status
from scheduler.framework.events import UNSCHEDULABLE_TIMEOUT, ActionType, Resource
from scheduler.queue import QueueName
from scheduler.queue.metrics import UNSCHEDULED_POD_ADD
from tests.support.clock import FakeClock
from tests.unit.queue.fakes import (
    NODE_ADD,
    PROFILE,
    QUEUE,
    Gate,
    RecordingMetrics,
    fail,
    make_queue,
    on,
    pod,
    pop,
    where,
)

GATES_GONE = ClusterEvent(Resource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)


def test_gated_pod_waits_in_the_pool_with_its_gate() -> None:
    metrics = RecordingMetrics()
    first, second = Gate("First"), Gate("Second", closed={"default/p"})
    queue = make_queue(
        pre_enqueue=[first, second], events={"Second": [on(NODE_ADD)]}, metrics=metrics
    )
    queue.add(pod("p"))
    assert where(queue, "p") == QueueName.GATED
    found = queue.get("default/p")
    assert found is not None
    pinfo = found[1]
    assert pinfo.gating_plugin == "Second"
    assert pinfo.gating_plugin_events == (NODE_ADD,)
    assert pinfo.unschedulable_plugins == {"Second"}
    assert metrics.pending_counts[QueueName.GATED] == 1
    assert metrics.unschedulable[("Second", PROFILE)] == 1
    assert metrics.incoming_events == [(QueueName.UNSCHEDULABLE, UNSCHEDULED_POD_ADD.label)]
    assert queue.pop_nowait() is None


def test_first_failing_plugin_stops_the_chain() -> None:
    first, second = Gate("First", closed={"default/p"}), Gate("Second", closed={"default/p"})
    queue = make_queue(pre_enqueue=[first, second])
    queue.add(pod("p"))
    assert (first.calls, second.calls) == (["default/p"], [])


def test_previous_gating_plugin_runs_first() -> None:
    first, second = Gate("First"), Gate("Second", closed={"default/p"})
    queue = make_queue(pre_enqueue=[first, second], events={"Second": [on(NODE_ADD)]})
    queue.add(pod("p"))
    first.calls.clear()
    second.calls.clear()
    first.closed.add("default/p")
    queue.move_all_to_active_or_backoff(NODE_ADD, None, None)
    assert (second.calls, first.calls) == (["default/p"], []), "still gated by Second"
    second.closed.clear()
    queue.move_all_to_active_or_backoff(NODE_ADD, None, None)
    found = queue.get("default/p")
    assert found is not None
    assert found[1].gating_plugin == "First"


def test_only_the_gating_plugins_events_release_the_pod() -> None:
    gate = Gate("Gates", closed={"default/p"})
    queue = make_queue(
        pre_enqueue=[gate],
        events={"Gates": [on(GATES_GONE, QUEUE)], "Fit": [on(NODE_ADD)]},
    )
    queue.add(pod("p"))
    gate.calls.clear()
    queue.move_all_to_active_or_backoff(NODE_ADD, None, None)
    assert gate.calls == [], "an event the gate did not register is not even evaluated"
    assert where(queue, "p") == QueueName.GATED
    gate.closed.clear()
    queue.move_all_to_active_or_backoff(GATES_GONE, None, None)
    assert where(queue, "p") == QueueName.ACTIVE


def test_removing_the_gates_ungates_through_the_update_hint() -> None:
    class SchedulingGates(Gate):
        def pre_enqueue(self, pod: Pod) -> Status | None:
            return super().pre_enqueue(pod) if pod.scheduling_gates else None

    gate = SchedulingGates("SchedulingGates", closed={"default/p"})
    queue = make_queue(pre_enqueue=[gate], events={"SchedulingGates": [on(GATES_GONE, QUEUE)]})
    gated = pod("p", lambda b: b.scheduling_gate("example.com/wait"))
    queue.add(gated)
    assert where(queue, "p") == QueueName.GATED
    queue.update(gated, pod("p"))
    assert where(queue, "p") == QueueName.ACTIVE
    assert pop(queue).gating_plugin == ""


def test_timeout_flush_leaves_gated_pods_alone() -> None:
    clock = FakeClock()
    queue = make_queue(clock, pre_enqueue=[Gate("Gate", closed={"default/p"})])
    queue.add(pod("p"))
    clock.advance(301)
    queue.flush_unschedulable_leftover()
    assert where(queue, "p") == QueueName.GATED


def test_gate_without_registered_events_opens_on_any_event() -> None:
    gate = Gate("Legacy", closed={"default/p"})
    queue = make_queue(pre_enqueue=[gate])  # "Legacy" registered nothing at all
    queue.add(pod("p"))
    queue.move_all_to_active_or_backoff(UNSCHEDULABLE_TIMEOUT, None, None)
    assert where(queue, "p") == QueueName.GATED, "not by the wildcard timeout"
    gate.closed.clear()
    queue.move_all_to_active_or_backoff(NODE_ADD, None, None)
    assert where(queue, "p") == QueueName.ACTIVE


def test_pre_enqueue_runs_when_entering_backoff_not_when_leaving() -> None:
    clock = FakeClock()
    gate = Gate("Gate")
    queue = make_queue(clock, pre_enqueue=[gate], events={"Fit": [on(NODE_ADD)]})
    queue.add(pod("p"))
    pinfo = pop(queue)
    queue.move_all_to_active_or_backoff(NODE_ADD, None, None)
    gate.calls.clear()
    fail(queue, pinfo, "Fit")
    assert (where(queue, "p"), gate.calls) == (QueueName.BACKOFF, ["default/p"])
    clock.advance(5)
    queue.flush_backoff_completed()
    assert (where(queue, "p"), gate.calls) == (QueueName.ACTIVE, ["default/p"])


def test_activate_reruns_pre_enqueue_of_a_gated_pod() -> None:
    gate = Gate("Gate", closed={"default/p"})
    queue = make_queue(pre_enqueue=[gate])
    queue.add(pod("p"))
    queue.activate([pod("p")])
    assert where(queue, "p") == QueueName.GATED
    gate.closed.clear()
    queue.activate([pod("p")])
    assert where(queue, "p") == QueueName.ACTIVE


def test_a_raising_pre_enqueue_plugin_gates_the_pod() -> None:
    class Broken(Gate):
        def pre_enqueue(self, pod: Pod) -> Status | None:
            raise RuntimeError("boom")

    queue = make_queue(pre_enqueue=[Broken("Broken")])
    queue.add(pod("p"))
    assert where(queue, "p") == QueueName.GATED
