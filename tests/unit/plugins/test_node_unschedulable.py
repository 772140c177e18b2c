"""NodeUnschedulable: cordoned nodes only take pods tolerating the unschedulable taint."""

from __future__ import annotations

import pytest

from plugins.node_unschedulable import (
    NAME,
    REASON_UNKNOWN_CONDITION,
    REASON_UNSCHEDULABLE,
    NodeUnschedulable,
)
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    EventResource,
    NodeInfo,
    Pod,
    QueueingHint,
)
from tests.support.builders import make_node, make_pod
from tests.unit.plugins.support import Obj, maybe_node, node_info, pod

UNSCHEDULABLE_KEY = "node.kubernetes.io/unschedulable"
CORDONED = make_node("n").unschedulable().obj()
SCHEDULABLE = make_node("n").obj()


@pytest.mark.parametrize(
    ("raw_node", "raw_pod", "code"),
    [
        pytest.param(SCHEDULABLE, make_pod("p").obj(), Code.SUCCESS, id="schedulable node"),
        pytest.param(
            CORDONED, make_pod("p").obj(), Code.UNSCHEDULABLE_AND_UNRESOLVABLE, id="cordoned"
        ),
        pytest.param(
            CORDONED,
            make_pod("p").toleration(UNSCHEDULABLE_KEY, effect="NoSchedule").obj(),
            Code.SUCCESS,
            id="cordoned, tolerated by key and effect",
        ),
        pytest.param(
            CORDONED,
            make_pod("p").toleration(UNSCHEDULABLE_KEY, operator="Exists").obj(),
            Code.SUCCESS,
            id="cordoned, tolerated by key with any effect",
        ),
        pytest.param(
            CORDONED,
            make_pod("p").toleration(operator="Exists").obj(),
            Code.SUCCESS,
            id="cordoned, tolerate-everything toleration",
        ),
        pytest.param(
            CORDONED,
            make_pod("p").toleration(UNSCHEDULABLE_KEY, effect="NoExecute").obj(),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            id="cordoned, toleration for another effect",
        ),
        pytest.param(
            CORDONED,
            make_pod("p").toleration("other", operator="Exists").obj(),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            id="cordoned, toleration for another key",
        ),
    ],
)
def test_filter(raw_node: Obj, raw_pod: Obj, code: Code) -> None:
    status = NodeUnschedulable().filter(CycleState(), pod(raw_pod), node_info(raw_node))
    if code is Code.SUCCESS:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.reasons) == (code, (REASON_UNSCHEDULABLE,))
        assert REASON_UNSCHEDULABLE == "node(s) were unschedulable"


def test_filter_without_node() -> None:
    status = NodeUnschedulable().filter(CycleState(), pod(make_pod("p").obj()), NodeInfo())
    assert status is not None
    assert (status.code, status.reasons) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        (REASON_UNKNOWN_CONDITION,),
    )


@pytest.mark.parametrize(
    ("incoming", "matches"),
    [
        pytest.param(ClusterEvent(EventResource.NODE, ActionType.ADD), True, id="NodeAdd"),
        pytest.param(
            ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT),
            True,
            id="NodeUpdateNodeTaint",
        ),
        pytest.param(
            ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL),
            False,
            id="NodeUpdateNodeLabel",
        ),
        pytest.param(
            ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.UPDATE_POD_TOLERATION),
            True,
            id="UnscheduledPodUpdatePodToleration",
        ),
    ],
)
def test_events(incoming: ClusterEvent, matches: bool) -> None:
    registered = NodeUnschedulable().events_to_register()
    assert any(r.event.matches(incoming) for r in registered) is matches


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(None, SCHEDULABLE, QueueingHint.QUEUE, id="schedulable node added"),
        pytest.param(None, CORDONED, QueueingHint.QUEUE_SKIP, id="cordoned node added"),
        pytest.param(CORDONED, SCHEDULABLE, QueueingHint.QUEUE, id="node uncordoned"),
        pytest.param(SCHEDULABLE, CORDONED, QueueingHint.QUEUE_SKIP, id="node cordoned"),
        pytest.param(CORDONED, CORDONED, QueueingHint.QUEUE_SKIP, id="still cordoned"),
        pytest.param(
            SCHEDULABLE, SCHEDULABLE, QueueingHint.QUEUE_SKIP, id="was already schedulable"
        ),
    ],
)
def test_node_change_hint(old: Obj | None, new: Obj, hint: QueueingHint) -> None:
    plugin = NodeUnschedulable()
    waiting = pod(make_pod("w").obj())
    assert (
        plugin.is_schedulable_after_node_change(waiting, maybe_node(old), maybe_node(new)) is hint
    )


WAITING = make_pod("w").uid("waiting").obj()


@pytest.mark.parametrize(
    ("new", "hint"),
    [
        pytest.param(
            make_pod("w").uid("waiting").toleration(UNSCHEDULABLE_KEY, effect="NoSchedule").obj(),
            QueueingHint.QUEUE,
            id="this pod now tolerates cordoned nodes",
        ),
        pytest.param(
            make_pod("w").uid("waiting").toleration("other", effect="NoSchedule").obj(),
            QueueingHint.QUEUE_SKIP,
            id="this pod gained an unrelated toleration",
        ),
        pytest.param(
            make_pod("o").uid("other").toleration(UNSCHEDULABLE_KEY, effect="NoSchedule").obj(),
            QueueingHint.QUEUE_SKIP,
            id="another pod gained the toleration",
        ),
    ],
)
def test_pod_toleration_hint(new: Obj, hint: QueueingHint) -> None:
    plugin = NodeUnschedulable()
    waiting: Pod = pod(WAITING)
    assert plugin.is_schedulable_after_pod_toleration_change(waiting, waiting, pod(new)) is hint


def test_name() -> None:
    assert NodeUnschedulable.name == NAME == "NodeUnschedulable"
