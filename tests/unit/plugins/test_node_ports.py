"""NodePorts: host ports conflict by protocol, port and host IP (0.0.0.0 is a wildcard)."""

from __future__ import annotations

import pytest

from plugins.node_ports import NAME, REASON, NodePorts
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    EventResource,
    HostPort,
    QueueingHint,
)
from tests.support.builders import make_node, make_pod
from tests.unit.plugins.support import Obj, node_info, pod

NODE = make_node("n").obj()


def holder(*ports: tuple[int, str, str]) -> Obj:
    """A pod on the node holding these (port, protocol, host IP) host ports."""
    builder = make_pod("holder").node("n")
    for port, protocol, host_ip in ports:
        builder.host_port(port, protocol, host_ip)
    return builder.obj()


@pytest.mark.parametrize(
    ("wanted", "held", "fits"),
    [
        pytest.param((80, "TCP", ""), (80, "TCP", ""), False, id="same port, both wildcard"),
        pytest.param((80, "TCP", ""), (81, "TCP", ""), True, id="other port"),
        pytest.param((80, "UDP", ""), (80, "TCP", ""), True, id="other protocol"),
        pytest.param(
            (80, "TCP", "10.0.0.1"), (80, "TCP", "10.0.0.2"), True, id="different host IPs"
        ),
        pytest.param((80, "TCP", "10.0.0.1"), (80, "TCP", "10.0.0.1"), False, id="same host IP"),
        pytest.param((80, "TCP", "10.0.0.1"), (80, "TCP", "0.0.0.0"), False, id="held on every IP"),
        pytest.param(
            (80, "TCP", "0.0.0.0"), (80, "TCP", "10.0.0.1"), False, id="wanted on every IP"
        ),
        pytest.param((80, "SCTP", ""), (80, "SCTP", "127.0.0.1"), False, id="SCTP wildcard"),
    ],
)
def test_filter(wanted: tuple[int, str, str], held: tuple[int, str, str], fits: bool) -> None:
    port, protocol, host_ip = wanted
    the_pod = pod(make_pod("p").host_port(port, protocol, host_ip).obj())
    plugin = NodePorts()
    state = CycleState()
    assert plugin.pre_filter(state, the_pod, []) == (None, None)
    status = plugin.filter(state, the_pod, node_info(NODE, holder(held)))
    if fits:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.reasons) == (Code.UNSCHEDULABLE, (REASON,))
        assert status.message() == "node(s) didn't have free ports for the requested pod ports"


def test_empty_node_fits() -> None:
    the_pod = pod(make_pod("p").host_port(80).obj())
    assert NodePorts().filter(CycleState(), the_pod, node_info(NODE)) is None


def test_pre_filter_skips_pods_without_host_ports() -> None:
    _, status = NodePorts().pre_filter(CycleState(), pod(make_pod("p").obj()), [])
    assert status is not None
    assert status.code is Code.SKIP


def test_ports_of_sidecars_count_but_not_of_plain_init_containers() -> None:
    raw = make_pod("p").obj()
    raw["spec"]["initContainers"] = [
        {"name": "init", "image": "i", "ports": [{"containerPort": 1, "hostPort": 1}]},
        {
            "name": "sidecar",
            "image": "s",
            "restartPolicy": "Always",
            "ports": [{"containerPort": 2, "hostPort": 2, "protocol": "UDP"}],
        },
    ]
    raw["spec"]["containers"][0]["ports"] = [
        {"containerPort": 3, "hostPort": 3, "hostIP": "10.0.0.1"},
        {"containerPort": 4},  # no host port
    ]
    assert pod(raw).host_ports == (
        HostPort("0.0.0.0", "UDP", 2),
        HostPort("10.0.0.1", "TCP", 3),
    )


@pytest.mark.parametrize(
    ("incoming", "matches"),
    [
        pytest.param(ClusterEvent(EventResource.NODE, ActionType.ADD), True, id="NodeAdd"),
        pytest.param(
            ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE),
            True,
            id="AssignedPodDelete",
        ),
        pytest.param(
            ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL),
            False,
            id="NodeUpdateNodeLabel",
        ),
        pytest.param(
            ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE_POD_LABEL),
            False,
            id="AssignedPodUpdate",
        ),
    ],
)
def test_events(incoming: ClusterEvent, matches: bool) -> None:
    registered = NodePorts().events_to_register()
    assert any(r.event.matches(incoming) for r in registered) is matches


@pytest.mark.parametrize(
    ("deleted", "hint"),
    [
        pytest.param(make_pod("d").node("n").host_port(80).obj(), QueueingHint.QUEUE, id="freed"),
        pytest.param(
            make_pod("d").node("n").host_port(81).obj(), QueueingHint.QUEUE_SKIP, id="other port"
        ),
        pytest.param(
            make_pod("d").node("n").obj(), QueueingHint.QUEUE_SKIP, id="held no host port"
        ),
        pytest.param(
            make_pod("d").host_port(80).obj(), QueueingHint.QUEUE_SKIP, id="was not on a node"
        ),
        pytest.param(
            make_pod("d").nominated("n").host_port(80).obj(),
            QueueingHint.QUEUE,
            id="was nominated",
        ),
    ],
)
def test_pod_deleted_hint(deleted: Obj, hint: QueueingHint) -> None:
    waiting = pod(make_pod("w").host_port(80).obj())
    assert NodePorts().is_schedulable_after_pod_deleted(waiting, pod(deleted), None) is hint


def test_name() -> None:
    assert NodePorts.name == NAME == "NodePorts"
