"""NodeResourcesFit queueing: which pod and node changes may let a rejected pod fit."""

from __future__ import annotations

import pytest

from plugins.node_resources_fit import NodeResourcesFit, NodeResourcesFitArgs
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    EventResource,
    Pod,
    QueueingHint,
)
from tests.support.builders import make_node, make_pod
from tests.unit.plugins.support import Obj, maybe_node, pod

QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.QUEUE_SKIP

WAITING = make_pod("w").uid("waiting").requests(cpu="2").obj()


def plugin() -> NodeResourcesFit:
    return NodeResourcesFit(NodeResourcesFitArgs())


@pytest.mark.parametrize(
    ("incoming", "matches"),
    [
        pytest.param(
            ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE),
            True,
            id="AssignedPodDelete",
        ),
        pytest.param(
            ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.DELETE),
            True,
            id="UnscheduledPodDelete (may free a nomination)",
        ),
        pytest.param(
            ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN),
            True,
            id="AssignedPodUpdatePodScaleDown",
        ),
        pytest.param(
            ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ADD), False, id="AssignedPodAdd"
        ),
        pytest.param(ClusterEvent(EventResource.NODE, ActionType.ADD), True, id="NodeAdd"),
        pytest.param(
            ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_ALLOCATABLE),
            True,
            id="NodeUpdateNodeAllocatable",
        ),
        pytest.param(
            ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT),
            False,
            id="NodeUpdateNodeTaint",
        ),
    ],
)
def test_events(incoming: ClusterEvent, matches: bool) -> None:
    registered = plugin().events_to_register()
    assert all(r.hint is not None for r in registered)
    assert any(r.event.matches(incoming) for r in registered) is matches


def _pod(raw: Obj | None) -> Pod | None:
    return None if raw is None else pod(raw)


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(
            make_pod("a").uid("a").node("n1").requests(cpu="1").obj(),
            None,
            QUEUE,
            id="assigned pod deleted",
        ),
        pytest.param(
            make_pod("a").uid("a").obj(), None, SKIP, id="unassigned, unnominated pod deleted"
        ),
        pytest.param(
            make_pod("a").uid("a").nominated("n1").obj(),
            None,
            QUEUE,
            id="nominated pod deleted",
        ),
        pytest.param(
            make_pod("w").uid("waiting").requests(cpu="3").obj(),
            make_pod("w").uid("waiting").requests(cpu="2").obj(),
            QUEUE,
            id="the waiting pod itself scaled down",
        ),
        pytest.param(
            make_pod("a").uid("a").requests(cpu="2").obj(),
            make_pod("a").uid("a").requests(cpu="1").obj(),
            SKIP,
            id="unassigned pod scaled down",
        ),
        pytest.param(
            make_pod("a").uid("a").node("n1").requests(cpu="2").obj(),
            make_pod("a").uid("a").node("n1").requests(cpu="1").obj(),
            QUEUE,
            id="assigned pod gave back cpu the waiting pod wants",
        ),
        pytest.param(
            make_pod("a").uid("a").node("n1").requests(cpu="1", memory="2Gi").obj(),
            make_pod("a").uid("a").node("n1").requests(cpu="1", memory="1Gi").obj(),
            SKIP,
            id="assigned pod gave back memory the waiting pod does not want",
        ),
    ],
)
def test_pod_event_hint(old: Obj | None, new: Obj | None, hint: QueueingHint) -> None:
    assert plugin().is_schedulable_after_pod_event(pod(WAITING), _pod(old), _pod(new)) is hint


def node(cpu: str, memory: str = "8Gi", pods: str = "110") -> Obj:
    return make_node("n").capacity(cpu=cpu, memory=memory, pods=pods).obj()


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(None, node("4"), QUEUE, id="big enough node added"),
        pytest.param(None, node("1"), SKIP, id="too small node added"),
        pytest.param(node("1"), node("4"), QUEUE, id="node grew enough cpu"),
        pytest.param(node("1"), node("1500m"), SKIP, id="node grew, still too small"),
        pytest.param(
            node("4", memory="4Gi"),
            node("4", memory="8Gi"),
            SKIP,
            id="node grew memory the pod does not want",
        ),
        pytest.param(node("4", pods="10"), node("4", pods="20"), QUEUE, id="node allows more pods"),
        pytest.param(None, node("4", pods="0"), SKIP, id="node added that takes no pods"),
    ],
)
def test_node_change_hint(old: Obj | None, new: Obj, hint: QueueingHint) -> None:
    assert (
        plugin().is_schedulable_after_node_change(pod(WAITING), maybe_node(old), maybe_node(new))
        is hint
    )


def test_extended_resource_growth_queues() -> None:
    waiting = pod(make_pod("w").request("example.com/gpu", "1").obj())
    old = make_node("n").obj()
    new = make_node("n").resource("example.com/gpu", "1").obj()
    assert (
        plugin().is_schedulable_after_node_change(waiting, maybe_node(old), maybe_node(new))
        is QUEUE
    )
