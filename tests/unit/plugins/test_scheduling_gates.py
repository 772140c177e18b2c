"""SchedulingGates: gated while spec.schedulingGates is non-empty."""

from __future__ import annotations

import pytest

from plugins.scheduling_gates import NAME, SchedulingGates
from scheduler.framework import ActionType, ClusterEvent, Code, EventResource, QueueingHint
from tests.support.builders import make_pod
from tests.unit.plugins.support import Obj, pod


@pytest.mark.parametrize(
    ("raw", "code", "message"),
    [
        pytest.param(make_pod("p").obj(), Code.SUCCESS, "", id="no gates"),
        pytest.param(
            make_pod("p").scheduling_gate("example.com/gate").obj(),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "waiting for scheduling gates: [example.com/gate]",
            id="one gate",
        ),
        pytest.param(
            make_pod("p").scheduling_gate("a").scheduling_gate("b").obj(),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "waiting for scheduling gates: [a b]",
            id="two gates in order",
        ),
    ],
)
def test_pre_enqueue(raw: Obj, code: Code, message: str) -> None:
    status = SchedulingGates().pre_enqueue(pod(raw))
    if code is Code.SUCCESS:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.message()) == (code, message)


def test_registers_gates_eliminated_only() -> None:
    (registered,) = SchedulingGates().events_to_register()
    assert registered.event.label == "PodUpdatePodSchedulingGatesEliminated"
    eliminated = ClusterEvent(
        EventResource.UNSCHEDULED_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    )
    assert registered.event.matches(eliminated)
    assert not registered.event.matches(
        ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.UPDATE_POD_LABEL)
    )


@pytest.mark.parametrize(
    ("updated_uid", "hint"),
    [
        pytest.param("waiting", QueueingHint.QUEUE, id="this pod lost its gates"),
        pytest.param("other", QueueingHint.QUEUE_SKIP, id="another pod lost its gates"),
    ],
)
def test_hint(updated_uid: str, hint: QueueingHint) -> None:
    plugin = SchedulingGates()
    (registered,) = plugin.events_to_register()
    assert registered.hint is not None
    waiting = pod(make_pod("w").uid("waiting").scheduling_gate("g").obj())
    old = pod(make_pod("x").uid(updated_uid).scheduling_gate("g").obj())
    new = pod(make_pod("x").uid(updated_uid).obj())
    assert registered.hint(waiting, old, new) is hint


def test_name() -> None:
    assert SchedulingGates.name == NAME == "SchedulingGates"
