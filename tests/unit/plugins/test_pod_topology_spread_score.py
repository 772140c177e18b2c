"""PodTopologySpread PreScore/Score/NormalizeScore against hand-computed values,
the system default constraints, plugin args and queueing hints."""

from __future__ import annotations

from typing import cast

import pydantic
import pytest

from plugins.pod_topology_spread import (
    PodTopologySpread,
    PodTopologySpreadArgs,
    new,
)
from plugins.pod_topology_spread.scoring import round_half_away
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    CycleState,
    EventResource,
    Handle,
    NodeInfo,
    NodeScore,
    QueueingHint,
)
from tests.support.builders import make_node, make_pod
from tests.support.informers import FakeStore
from tests.unit.plugins.support import (
    FakeHandle,
    FakeInformers,
    FakeSnapshot,
    Obj,
    maybe_node,
    node_info,
    pod,
)

WEB = {"matchLabels": {"app": "web"}}
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
SOFT = "ScheduleAnyway"


def web(name: str, node: str) -> Obj:
    return make_pod(name).label("app", "web").node(node).obj()


def plugin_for(
    nodes: list[NodeInfo],
    args: PodTopologySpreadArgs | None = None,
    informers: FakeInformers | None = None,
) -> PodTopologySpread:
    handle = FakeHandle(FakeSnapshot(nodes), informers)
    return new(args or PodTopologySpreadArgs(), cast(Handle, handle))


def scores(
    plugin: PodTopologySpread, raw_pod: Obj, nodes: list[NodeInfo]
) -> tuple[list[int], list[int]]:
    """(raw scores, normalized scores) over ``nodes`` as feasible nodes."""
    state = CycleState()
    incoming = pod(raw_pod)
    assert plugin.pre_score(state, incoming, nodes) is None
    raw = []
    for info in nodes:
        value, status = plugin.score(state, incoming, info)
        assert status is None
        raw.append(value)
    entries = [NodeScore(info.name, value) for info, value in zip(nodes, raw, strict=True)]
    assert plugin.normalize_score(state, incoming, entries) is None
    return raw, [entry.score for entry in entries]


def test_zone_constraint_scores_fewer_pods_higher() -> None:
    nodes = [
        node_info(make_node("a1").zone("a").obj(), web("w1", "a1"), web("w2", "a1")),
        node_info(make_node("a2").zone("a").obj()),
        node_info(make_node("b1").zone("b").obj(), web("w3", "b1")),
    ]
    raw_pod = make_pod("p").label("app", "web").spread(1, ZONE, SOFT, selector=WEB).obj()
    # Two domains: weight ln(4) = 1.386; zone a has 2 pods, b has 1.
    # a: 2 x 1.386 + 0 = 2.77 -> 3; b: 1.386 -> 1.
    # Normalized: 100 x (3 + 1 - s) / 3 -> a: 33, b: 100.
    assert scores(plugin_for(nodes), raw_pod, nodes) == ([3, 3, 1], [33, 33, 100])


def test_hostname_constraint_counts_pods_on_the_node() -> None:
    nodes = [
        node_info(make_node("n1").obj(), web("w1", "n1"), web("w2", "n1"), web("w3", "n1")),
        node_info(make_node("n2").obj(), web("w4", "n2")),
        node_info(make_node("n3").obj()),
    ]
    raw_pod = make_pod("p").label("app", "web").spread(2, HOST, SOFT, selector=WEB).obj()
    # Weight ln(3 + 2) = 1.609; + (maxSkew - 1) = 1.
    # n1: 3 x 1.609 + 1 = 5.83 -> 6; n2: 2.61 -> 3; n3: 1.
    # Normalized by max 6, min 1: n1 100 x 1/6 = 16, n2 100 x 4/6 = 66, n3 100.
    assert scores(plugin_for(nodes), raw_pod, nodes) == ([6, 3, 1], [16, 66, 100])


def test_nodes_missing_a_key_are_ignored_and_score_zero() -> None:
    nodes = [
        node_info(make_node("a1").zone("a").obj(), web("w1", "a1")),
        node_info(make_node("b1").zone("b").obj()),
        node_info(make_node("x").obj()),
    ]
    raw_pod = make_pod("p").label("app", "web").spread(1, ZONE, SOFT, selector=WEB).obj()
    # Domains a, b (x ignored): weight ln 4; a1: 1.386 -> 1, b1: 0, x: 0.
    # max 1, min 0: a1 100 x 0/1 = 0, b1 100 x 1/1 = 100, x ignored -> 0.
    assert scores(plugin_for(nodes), raw_pod, nodes) == ([1, 0, 0], [0, 100, 0])


def test_all_zero_scores_normalize_to_100() -> None:
    nodes = [node_info(make_node("a1").zone("a").obj()), node_info(make_node("b1").zone("b").obj())]
    raw_pod = make_pod("p").label("app", "web").spread(1, ZONE, SOFT, selector=WEB).obj()
    assert scores(plugin_for(nodes), raw_pod, nodes) == ([0, 0], [100, 100])


def system_default_informers() -> FakeInformers:
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web-1", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
    }
    return FakeInformers({"replicasets": FakeStore([rs])})


def test_system_defaults_spread_replica_set_pods() -> None:
    nodes = [
        node_info(make_node("a1").zone("a").obj(), web("w1", "a1")),
        node_info(make_node("a2").zone("a").obj()),
        node_info(make_node("x").obj()),
    ]
    raw_pod = make_pod("p").label("app", "web").owner("ReplicaSet", "web-1").obj()
    # System defaults: hostname maxSkew 3 (weight ln(3 + 2) = 1.609) and zone
    # maxSkew 5; keys are not required, so x is not ignored and its zone is ""
    # (domains a and "": weight ln 4 = 1.386).
    # a1: 1 x 1.609 + 2 + 1 x 1.386 + 4 = 9.0 -> 9; a2: 2 + 1.386 + 4 = 7.39 -> 7;
    # x: 2 (no zone label, so no zone term).
    # Normalized by max 9, min 2: a1 100 x 2/9 = 22, a2 100 x 4/9 = 44, x 100.
    plugin = plugin_for(nodes, informers=system_default_informers())
    assert scores(plugin, raw_pod, nodes) == ([9, 7, 2], [22, 44, 100])


def test_system_defaults_skip_pods_without_services_or_controller() -> None:
    nodes = [node_info(make_node("a1").zone("a").obj())]
    plugin = plugin_for(nodes, informers=system_default_informers())
    status = plugin.pre_score(CycleState(), pod(make_pod("p").label("app", "web").obj()), nodes)
    assert status is not None
    assert status.is_skip()


def test_service_selector_gives_default_constraints() -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}},
    }
    informers = FakeInformers({"services": FakeStore([service])})
    nodes = [node_info(make_node("a1").zone("a").obj(), web("w1", "a1"))]
    plugin = plugin_for(nodes, informers=informers)
    incoming = pod(make_pod("p").label("app", "web").obj())
    assert [c.topology_key for c in plugin.constraints(incoming, SOFT)] == [HOST, ZONE]
    assert plugin.constraints(incoming, "DoNotSchedule") == ()


def test_list_defaulting_uses_the_configured_constraints() -> None:
    args = PodTopologySpreadArgs.model_validate(
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
            ],
        }
    )
    nodes = [node_info(make_node("a1").zone("a").obj())]
    plugin = plugin_for(nodes, args, system_default_informers())
    incoming = pod(make_pod("p").label("app", "web").owner("ReplicaSet", "web-1").obj())
    [constraint] = plugin.constraints(incoming, "DoNotSchedule")
    assert (constraint.topology_key, constraint.max_skew) == (ZONE, 1)
    assert constraint.selector.matches({"app": "web"})
    assert not constraint.selector.matches({"app": "db"})


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(2.5, 3, id="half rounds up"),
        pytest.param(0.5, 1, id="half of one rounds up"),
        pytest.param(2.4999, 2, id="below half rounds down"),
        pytest.param(-2.5, -3, id="negative half away from zero"),
    ],
)
def test_round_half_away_from_zero(value: float, expected: int) -> None:
    assert round_half_away(value) == expected


# ------------------------------------------------------------------ args
@pytest.mark.parametrize(
    ("raw", "field"),
    [
        pytest.param(
            {
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": SOFT}
                ]
            },
            "defaultingType",
            id="System with constraints",
        ),
        pytest.param(
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 0, "topologyKey": ZONE, "whenUnsatisfiable": SOFT}
                ],
            },
            "maxSkew",
            id="maxSkew 0",
        ),
        pytest.param(
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": ZONE,
                        "whenUnsatisfiable": SOFT,
                        "labelSelector": {},
                    }
                ],
            },
            "labelSelector",
            id="selector in a default constraint",
        ),
        pytest.param(
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": SOFT},
                    {"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": SOFT},
                ],
            },
            "defaultConstraints[1]",
            id="duplicate key and action",
        ),
        pytest.param(
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": SOFT}
                ],
            },
            "topologyKey",
            id="empty topology key",
        ),
        pytest.param(
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "Never"}
                ],
            },
            "whenUnsatisfiable",
            id="unknown action",
        ),
        pytest.param({"defaultingType": "Sometimes"}, "defaultingType", id="unknown defaulting"),
    ],
)
def test_invalid_args_name_the_field(raw: Obj, field: str) -> None:
    with pytest.raises(pydantic.ValidationError) as error:
        PodTopologySpreadArgs.model_validate(raw)
    assert field in str(error.value)


def test_default_args_are_system_defaulting() -> None:
    args = PodTopologySpreadArgs.model_validate({})
    assert (args.defaulting_type.value, args.default_constraints) == ("System", ())


# ------------------------------------------------------------------ hints
SPREAD_POD = make_pod("p").uid("p").label("app", "web").spread(1, ZONE, selector=WEB).obj()


def test_registered_events() -> None:
    plugin = plugin_for([])
    events = [registration.event for registration in plugin.events_to_register()]
    assert events == [
        ClusterEvent(
            EventResource.POD,
            ActionType.ADD
            | ActionType.UPDATE_POD_LABEL
            | ActionType.UPDATE_POD_TOLERATION
            | ActionType.DELETE,
        ),
        ClusterEvent(
            EventResource.NODE,
            ActionType.ADD
            | ActionType.DELETE
            | ActionType.UPDATE_NODE_LABEL
            | ActionType.UPDATE_NODE_TAINT,
        ),
    ]


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(None, web("w", "n1"), QueueingHint.QUEUE, id="matching pod bound"),
        pytest.param(
            None,
            make_pod("w").label("app", "web").obj(),
            QueueingHint.QUEUE_SKIP,
            id="unscheduled pod",
        ),
        pytest.param(
            None,
            make_pod("w").label("app", "db").node("n1").obj(),
            QueueingHint.QUEUE_SKIP,
            id="pod outside the selector",
        ),
        pytest.param(
            None,
            make_pod("w", "other").label("app", "web").node("n1").obj(),
            QueueingHint.QUEUE_SKIP,
            id="other namespace",
        ),
        pytest.param(web("w", "n1"), None, QueueingHint.QUEUE, id="matching pod deleted"),
        pytest.param(
            make_pod("w").label("app", "db").node("n1").obj(),
            web("w", "n1"),
            QueueingHint.QUEUE,
            id="label update starts matching",
        ),
        pytest.param(
            make_pod("w").label("app", "web").label("x", "1").node("n1").obj(),
            web("w", "n1"),
            QueueingHint.QUEUE_SKIP,
            id="unrelated label update",
        ),
    ],
)
def test_pod_change_hint(old: Obj | None, new: Obj | None, hint: QueueingHint) -> None:
    plugin = plugin_for([])
    before = None if old is None else pod(old)
    after = None if new is None else pod(new)
    assert plugin.is_schedulable_after_pod_change(pod(SPREAD_POD), before, after) is hint


def test_own_toleration_change_queues_with_taints_policy_honor() -> None:
    plugin = plugin_for([])
    honor = (
        make_pod("p")
        .uid("p")
        .label("app", "web")
        .spread(1, ZONE, selector=WEB, nodeTaintsPolicy="Honor")
    )
    old = pod(honor.obj())
    new_pod = pod(honor.toleration("dedicated", operator="Exists").node("n1").obj())
    assert plugin.is_schedulable_after_pod_change(old, old, new_pod) is QueueingHint.QUEUE


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(
            None, make_node("n").zone("a").obj(), QueueingHint.QUEUE, id="node with the key added"
        ),
        pytest.param(
            None, make_node("n").obj(), QueueingHint.QUEUE_SKIP, id="node without the key added"
        ),
        pytest.param(
            make_node("n").zone("a").obj(), None, QueueingHint.QUEUE, id="node with the key deleted"
        ),
        pytest.param(
            make_node("n").obj(),
            make_node("n").zone("a").obj(),
            QueueingHint.QUEUE,
            id="key label added",
        ),
        pytest.param(
            make_node("n").zone("a").obj(),
            make_node("n").zone("b").obj(),
            QueueingHint.QUEUE,
            id="zone changed",
        ),
        pytest.param(
            make_node("n").zone("a").obj(),
            make_node("n").zone("a").taint("k").obj(),
            QueueingHint.QUEUE,
            id="taints changed",
        ),
        pytest.param(
            make_node("n").zone("a").obj(),
            make_node("n").zone("a").label("other", "1").obj(),
            QueueingHint.QUEUE_SKIP,
            id="unrelated label",
        ),
    ],
)
def test_node_change_hint(old: Obj | None, new: Obj | None, hint: QueueingHint) -> None:
    plugin = plugin_for([])
    assert (
        plugin.is_schedulable_after_node_change(pod(SPREAD_POD), maybe_node(old), maybe_node(new))
        is hint
    )


def _controller(kind: str, api_version: str, selector: Obj) -> Obj:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "owner", "namespace": "default"},
        "spec": {"selector": selector},
    }


@pytest.mark.parametrize(
    ("stores", "owner", "selected", "not_selected"),
    [
        pytest.param(
            {
                "replicationcontrollers": [
                    _controller("ReplicationController", "v1", {"app": "web"})
                ]
            },
            ("ReplicationController", "v1"),
            {"app": "web", "x": "1"},
            {"app": "db"},
            id="ReplicationController selector",
        ),
        pytest.param(
            {
                "statefulsets": [
                    _controller(
                        "StatefulSet",
                        "apps/v1",
                        {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
                    )
                ]
            },
            ("StatefulSet", "apps/v1"),
            {"app": "web"},
            {"app": "db"},
            id="StatefulSet selector",
        ),
        pytest.param(
            {
                "services": [
                    {
                        "metadata": {"name": "s", "namespace": "default"},
                        "spec": {"selector": {"app": "web"}},
                    },
                    {
                        "metadata": {"name": "t", "namespace": "default"},
                        "spec": {"selector": {"tier": "front"}},
                    },
                    {
                        "metadata": {"name": "u", "namespace": "other"},
                        "spec": {"selector": {"app": "web"}},
                    },
                ]
            },
            None,
            {"app": "web", "tier": "front"},
            {"app": "web"},
            id="selectors of every service in the namespace selecting the pod",
        ),
    ],
)
def test_default_selector_sources(
    stores: dict[str, list[Obj]],
    owner: tuple[str, str] | None,
    selected: dict[str, str],
    not_selected: dict[str, str],
) -> None:
    informers = FakeInformers({name: FakeStore(objects) for name, objects in stores.items()})
    plugin = plugin_for([], informers=informers)
    builder = make_pod("p").label("app", "web").label("tier", "front")
    if owner is not None:
        builder.owner(owner[0], "owner", api_version=owner[1])
    constraints = plugin.constraints(pod(builder.obj()), SOFT)
    assert [c.topology_key for c in constraints] == [HOST, "topology.kubernetes.io/zone"]
    assert constraints[0].selector.matches(selected)
    assert not constraints[0].selector.matches(not_selected)
