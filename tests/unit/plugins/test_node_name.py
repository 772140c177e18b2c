"""NodeName: spec.nodeName pins the pod to one node."""

from __future__ import annotations

import pytest

from plugins.node_name import NAME, REASON, NodeName
from scheduler.framework import ActionType, ClusterEvent, Code, CycleState, EventResource
from tests.support.builders import make_node, make_pod
from tests.unit.plugins.support import Obj, node_info, pod


@pytest.mark.parametrize(
    ("raw_pod", "code"),
    [
        pytest.param(make_pod("p").obj(), Code.SUCCESS, id="no node name fits any node"),
        pytest.param(make_pod("p").node("n1").obj(), Code.SUCCESS, id="node name matches"),
        pytest.param(
            make_pod("p").node("n2").obj(),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            id="node name differs",
        ),
    ],
)
def test_filter(raw_pod: Obj, code: Code) -> None:
    status = NodeName().filter(CycleState(), pod(raw_pod), node_info(make_node("n1").obj()))
    if code is Code.SUCCESS:
        assert status is None
    else:
        assert status is not None
        assert status.code is code
        assert status.reasons == (REASON,)
        assert REASON == "node(s) didn't match the requested node name"


@pytest.mark.parametrize(
    ("incoming", "matches"),
    [
        pytest.param(ClusterEvent(EventResource.NODE, ActionType.ADD), True, id="NodeAdd"),
        pytest.param(
            ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL), True, id="NodeUpdate"
        ),
        pytest.param(ClusterEvent(EventResource.NODE, ActionType.DELETE), False, id="NodeDelete"),
        pytest.param(
            ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE), False, id="pod delete"
        ),
    ],
)
def test_events(incoming: ClusterEvent, matches: bool) -> None:
    assert any(r.event.matches(incoming) for r in NodeName().events_to_register()) is matches


def test_name() -> None:
    assert NodeName.name == NAME == "NodeName"
