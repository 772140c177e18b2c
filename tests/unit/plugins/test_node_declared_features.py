"""NodeDeclaredFeatures: pods needing node features go to nodes declaring them."""

from __future__ import annotations

import pytest

from plugins.node_declared_features import (
    NAME,
    REASON,
    NodeDeclaredFeatures,
    required_features,
)
from scheduler.engine.eventhandlers import node_update_action
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    EventResource,
    QueueingHint,
    parse_node,
)
from tests.support.builders import make_node, make_pod
from tests.unit.plugins.support import Obj, maybe_node, node_info, pod

RESTART_ALL = "RestartAllContainersOnContainerExits"
USERNS_HOST_NETWORK = "UserNamespacesHostNetworkSupport"


def restart_all_pod() -> Obj:
    raw = make_pod("p").obj()
    raw["spec"]["containers"][0]["restartPolicyRules"] = [
        {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
    ]
    return raw


USERNS_POD = make_pod("p").spec_field("hostNetwork", True).spec_field("hostUsers", False).obj()


@pytest.mark.parametrize(
    ("raw_pod", "features"),
    [
        pytest.param(make_pod("p").obj(), set(), id="plain pod"),
        pytest.param(restart_all_pod(), {RESTART_ALL}, id="restart-all rule"),
        pytest.param(USERNS_POD, {USERNS_HOST_NETWORK}, id="host network in a user namespace"),
        pytest.param(
            make_pod("p").spec_field("hostNetwork", True).obj(),
            set(),
            id="host network, host users",
        ),
    ],
)
def test_required_features(raw_pod: Obj, features: set[str]) -> None:
    assert required_features(pod(raw_pod)) == features


@pytest.mark.parametrize(
    ("raw_pod", "raw_node", "fits"),
    [
        pytest.param(
            restart_all_pod(), make_node("n").declared_features(RESTART_ALL).obj(), True, id="ok"
        ),
        pytest.param(restart_all_pod(), make_node("n").obj(), False, id="not declared"),
        pytest.param(
            USERNS_POD,
            make_node("n").declared_features(RESTART_ALL).obj(),
            False,
            id="declares another feature",
        ),
    ],
)
def test_filter(raw_pod: Obj, raw_node: Obj, fits: bool) -> None:
    plugin = NodeDeclaredFeatures()
    the_pod = pod(raw_pod)
    state = CycleState()
    assert plugin.pre_filter(state, the_pod, []) == (None, None)
    status = plugin.filter(state, the_pod, node_info(raw_node))
    if fits:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON,))
        assert status.message() == "node(s) didn't match Pod's required features"


def test_pre_filter_skips_pods_needing_nothing() -> None:
    _, status = NodeDeclaredFeatures().pre_filter(CycleState(), pod(make_pod("p").obj()), [])
    assert status is not None
    assert status.code is Code.SKIP


@pytest.mark.parametrize(
    ("incoming", "matches"),
    [
        pytest.param(ClusterEvent(EventResource.NODE, ActionType.ADD), True, id="NodeAdd"),
        pytest.param(
            ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_DECLARED_FEATURE),
            True,
            id="NodeUpdateNodeDeclaredFeature",
        ),
        pytest.param(
            ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL),
            False,
            id="NodeUpdateNodeLabel",
        ),
    ],
)
def test_events(incoming: ClusterEvent, matches: bool) -> None:
    registered = NodeDeclaredFeatures().events_to_register()
    assert any(r.event.matches(incoming) for r in registered) is matches


PLAIN = make_node("n").obj()
DECLARING = make_node("n").declared_features(RESTART_ALL).obj()


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(None, PLAIN, QueueingHint.QUEUE, id="node added"),
        pytest.param(PLAIN, DECLARING, QueueingHint.QUEUE, id="features changed"),
        pytest.param(DECLARING, DECLARING, QueueingHint.QUEUE_SKIP, id="features unchanged"),
    ],
)
def test_node_change_hint(old: Obj | None, new: Obj, hint: QueueingHint) -> None:
    plugin = NodeDeclaredFeatures()
    the_pod = pod(restart_all_pod())
    assert (
        plugin.is_schedulable_after_node_change(the_pod, maybe_node(old), maybe_node(new)) is hint
    )


def test_node_update_event_reports_declared_features() -> None:
    action = node_update_action(parse_node(PLAIN), parse_node(DECLARING))
    assert action == ActionType.UPDATE_NODE_DECLARED_FEATURE


def test_name() -> None:
    assert NodeDeclaredFeatures.name == NAME == "NodeDeclaredFeatures"
