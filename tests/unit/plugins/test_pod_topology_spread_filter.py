"""PodTopologySpread PreFilter/Filter against hand-computed skews, AddPod/RemovePod."""

from __future__ import annotations

from typing import cast

import pytest

from plugins.pod_topology_spread import (
    REASON_CONSTRAINTS_NOT_MATCH,
    REASON_NODE_LABEL_NOT_MATCH,
    PodTopologySpread,
    PodTopologySpreadArgs,
    new,
)
from plugins.pod_topology_spread.filtering import CriticalPaths
from scheduler.framework import Code, CycleState, Handle, NodeInfo, Status
from tests.support.builders import make_node, make_pod
from tests.unit.plugins.support import FakeHandle, FakeSnapshot, Obj, node_info, pod

WEB = {"matchLabels": {"app": "web"}}
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"

OK = (Code.SUCCESS, "")
SKEWED = (Code.UNSCHEDULABLE, REASON_CONSTRAINTS_NOT_MATCH)
MISSING = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_NODE_LABEL_NOT_MATCH)


def web(name: str, node: str, namespace: str = "default") -> Obj:
    return make_pod(name, namespace).label("app", "web").node(node).obj()


def plugin_for(nodes: list[NodeInfo]) -> PodTopologySpread:
    handle = FakeHandle(FakeSnapshot(nodes))
    return new(PodTopologySpreadArgs(), cast(Handle, handle))


def verdicts(raw_pod: Obj, nodes: list[NodeInfo]) -> dict[str, tuple[Code, str]]:
    plugin = plugin_for(nodes)
    state = CycleState()
    incoming = pod(raw_pod)
    _, status = plugin.pre_filter(state, incoming, nodes)
    assert status is None, status
    result = {}
    for info in nodes:
        verdict = plugin.filter(state, incoming, info) or Status.success()
        result[info.name] = (verdict.code, verdict.message())
    return result


def zones() -> list[NodeInfo]:
    """a1, a2 in zone a; b1 in zone b; x without a zone. Web pods: a1 one, a2 one."""
    return [
        node_info(make_node("a1").zone("a").obj(), web("w1", "a1")),
        node_info(make_node("a2").zone("a").obj(), web("w2", "a2")),
        node_info(make_node("b1").zone("b").obj()),
        node_info(make_node("x").obj()),
    ]


@pytest.mark.parametrize(
    ("raw_pod", "nodes", "expected"),
    [
        pytest.param(
            make_pod("p").label("app", "web").spread(1, ZONE, selector=WEB).obj(),
            zones(),
            # a: 2 pods, b: 0, min 0: a -> 2+1-0=3 > 1, b -> 0+1-0=1.
            {"a1": SKEWED, "a2": SKEWED, "b1": OK, "x": MISSING},
            id="zone skew: the empty zone is the only fit; unlabeled node unresolvable",
        ),
        pytest.param(
            make_pod("p").label("app", "web").spread(2, ZONE, selector=WEB).obj(),
            zones(),
            # maxSkew 2: a -> 3 > 2 still.
            {"a1": SKEWED, "a2": SKEWED, "b1": OK, "x": MISSING},
            id="maxSkew 2 still too skewed for zone a",
        ),
        pytest.param(
            make_pod("p").label("app", "web").spread(3, ZONE, selector=WEB).obj(),
            zones(),
            {"a1": OK, "a2": OK, "b1": OK, "x": MISSING},
            id="maxSkew 3 allows zone a",
        ),
        pytest.param(
            make_pod("p").spread(2, ZONE, selector=WEB).obj(),
            zones(),
            # The pod does not match its own selector: a -> 2+0-0=2 <= 2.
            {"a1": OK, "a2": OK, "b1": OK, "x": MISSING},
            id="a pod outside its selector does not count itself",
        ),
        pytest.param(
            make_pod("p").label("app", "web").spread(1, HOST, selector=WEB).obj(),
            zones(),
            # Hostname domains: a1 1, a2 1, b1 0, x 0 -> min 0.
            {"a1": SKEWED, "a2": SKEWED, "b1": OK, "x": OK},
            id="hostname spread",
        ),
        pytest.param(
            make_pod("p", "other").label("app", "web").spread(1, ZONE, selector=WEB).obj(),
            zones(),
            {"a1": OK, "a2": OK, "b1": OK, "x": MISSING},
            id="pods of other namespaces do not count",
        ),
        pytest.param(
            make_pod("p").label("app", "web").spread(1, ZONE, selector=WEB).obj(),
            [
                node_info(
                    make_node("a1").zone("a").obj(),
                    make_pod("w1").label("app", "web").node("a1").deleting().obj(),
                ),
                node_info(make_node("b1").zone("b").obj()),
            ],
            {"a1": OK, "b1": OK},
            id="terminating pods do not count",
        ),
        pytest.param(
            make_pod("p").label("app", "web").spread(1, ZONE, selector=WEB, minDomains=3).obj(),
            [
                node_info(make_node("a1").zone("a").obj(), web("w1", "a1"), web("w2", "a1")),
                node_info(make_node("b1").zone("b").obj(), web("w3", "b1")),
            ],
            # 2 domains < minDomains 3: min is 0, b -> 1+1-0=2 > 1.
            {"a1": SKEWED, "b1": SKEWED},
            id="fewer domains than minDomains: global minimum 0",
        ),
        pytest.param(
            make_pod("p").label("app", "web").spread(1, ZONE, selector=WEB).obj(),
            [
                node_info(make_node("a1").zone("a").obj(), web("w1", "a1"), web("w2", "a1")),
                node_info(make_node("b1").zone("b").obj(), web("w3", "b1")),
            ],
            # min 1: a -> 2+1-1=2 > 1, b -> 1+1-1=1.
            {"a1": SKEWED, "b1": OK},
            id="without minDomains the smallest domain is the minimum",
        ),
        pytest.param(
            make_pod("p")
            .label("app", "web")
            .node_selector(tier="x")
            .spread(1, ZONE, selector=WEB)
            .obj(),
            [
                node_info(make_node("a1").zone("a").label("tier", "x").obj(), web("w1", "a1")),
                node_info(make_node("b1").zone("b").obj()),
            ],
            # nodeAffinityPolicy Honor (default): b1 does not match the node
            # selector, so zone b is no domain; min = 1 (zone a): a1 -> 1+1-1=1.
            {"a1": OK, "b1": OK},
            id="nodeAffinityPolicy Honor leaves out nodes the pod cannot use",
        ),
        pytest.param(
            make_pod("p")
            .label("app", "web")
            .node_selector(tier="x")
            .spread(1, ZONE, selector=WEB, nodeAffinityPolicy="Ignore")
            .obj(),
            [
                node_info(make_node("a1").zone("a").label("tier", "x").obj(), web("w1", "a1")),
                node_info(make_node("b1").zone("b").obj()),
            ],
            # Ignore: zone b counts with 0 pods; a1 -> 1+1-0=2 > 1.
            {"a1": SKEWED, "b1": OK},
            id="nodeAffinityPolicy Ignore counts every node",
        ),
        pytest.param(
            make_pod("p")
            .label("app", "web")
            .spread(1, ZONE, selector=WEB, nodeTaintsPolicy="Honor")
            .obj(),
            [
                node_info(make_node("a1").zone("a").obj(), web("w1", "a1")),
                node_info(make_node("b1").zone("b").taint("dedicated", "x").obj()),
            ],
            # Honor: the tainted node's zone is no domain; min 1: a1 -> 1.
            {"a1": OK, "b1": OK},
            id="nodeTaintsPolicy Honor leaves out untolerated tainted nodes",
        ),
        pytest.param(
            make_pod("p").label("app", "web").spread(1, ZONE, selector=WEB).obj(),
            [
                node_info(make_node("a1").zone("a").obj(), web("w1", "a1")),
                node_info(make_node("b1").zone("b").taint("dedicated", "x").obj()),
            ],
            # Ignore (default): zone b counts with 0 pods.
            {"a1": SKEWED, "b1": OK},
            id="nodeTaintsPolicy Ignore counts tainted nodes",
        ),
        pytest.param(
            make_pod("p")
            .label("app", "web")
            .label("version", "v2")
            .spread(1, ZONE, selector=WEB, matchLabelKeys=["version"])
            .obj(),
            [
                node_info(
                    make_node("a1").zone("a").obj(),
                    make_pod("w1").label("app", "web").label("version", "v1").node("a1").obj(),
                ),
                node_info(make_node("b1").zone("b").obj()),
            ],
            # Only version=v2 pods count: none anywhere.
            {"a1": OK, "b1": OK},
            id="matchLabelKeys narrows the selector to the pod's values",
        ),
        pytest.param(
            make_pod("p")
            .label("app", "web")
            .spread(1, ZONE, selector=WEB)
            .spread(1, HOST, selector=WEB)
            .obj(),
            [
                node_info(make_node("a1").zone("a").obj(), web("w1", "a1")),
                node_info(make_node("a2").zone("a").obj()),
                node_info(make_node("b1").zone("b").obj(), web("w2", "b1")),
                node_info(make_node("b2").zone("b").obj()),
            ],
            # Zones 1/1: all pass the zone constraint; hostname min 0.
            {"a1": SKEWED, "a2": OK, "b1": SKEWED, "b2": OK},
            id="every constraint must hold",
        ),
        pytest.param(
            make_pod("p").label("app", "web").spread(1, ZONE, selector={}).obj(),
            zones(),
            # An empty selector counts no pod but matches the pod itself.
            {"a1": OK, "a2": OK, "b1": OK, "x": MISSING},
            id="empty selector counts nothing",
        ),
    ],
)
def test_filter(raw_pod: Obj, nodes: list[NodeInfo], expected: dict[str, tuple[Code, str]]) -> None:
    assert verdicts(raw_pod, nodes) == expected


def test_pre_filter_skips_pods_without_hard_constraints() -> None:
    nodes = zones()
    plugin = plugin_for(nodes)
    soft_only = pod(
        make_pod("p").label("app", "web").spread(1, ZONE, "ScheduleAnyway", selector=WEB).obj()
    )
    _, status = plugin.pre_filter(CycleState(), soft_only, nodes)
    assert status is not None
    assert status.is_skip()


@pytest.mark.parametrize(
    ("when", "selector", "problem"),
    [
        pytest.param(
            "DoNotSchedule",
            {"matchLabels": {"app": "-web"}},
            'values[0]: Invalid value: "-web"',
            id="hard constraint with an invalid value fails PreFilter",
        ),
        pytest.param(
            "ScheduleAnyway",
            {"matchExpressions": [{"key": "-app", "operator": "Exists"}]},
            'key: Invalid value: "-app"',
            id="soft constraint with an invalid key fails PreScore",
        ),
    ],
)
def test_an_invalid_selector_is_an_error_where_upstream_errors(
    when: str, selector: Obj, problem: str
) -> None:
    nodes = zones()
    plugin = plugin_for(nodes)
    incoming = pod(make_pod("p").label("app", "web").spread(1, ZONE, when, selector=selector).obj())

    if when == "DoNotSchedule":
        status = plugin.pre_filter(CycleState(), incoming, nodes)[1]
        prefix = "get constraints from pod: "
    else:
        status = plugin.pre_score(CycleState(), incoming, nodes)
        prefix = "calculating preScoreState: "

    assert status is not None
    assert status.code is Code.ERROR
    assert status.message().startswith(prefix + problem)


def test_add_and_remove_pod_change_the_counts_for_what_ifs() -> None:
    nodes = [
        node_info(make_node("a1").zone("a").obj(), web("w1", "a1")),
        node_info(make_node("b1").zone("b").obj()),
    ]
    plugin = plugin_for(nodes)
    incoming = pod(make_pod("p").label("app", "web").spread(1, ZONE, selector=WEB).obj())
    state = CycleState()
    plugin.pre_filter(state, incoming, nodes)
    a1, b1 = nodes
    assert plugin.filter(state, incoming, a1) == Status.unschedulable(REASON_CONSTRAINTS_NOT_MATCH)
    assert plugin.filter(state, incoming, b1) is None

    what_if = state.clone()
    assert plugin.add_pod(what_if, incoming, pod(web("w2", "b1")), b1) is None
    assert plugin.filter(what_if, incoming, a1) is None, "zones now 1/1"
    assert plugin.filter(state, incoming, a1) is not None, "the original state is untouched"

    assert plugin.remove_pod(what_if, incoming, pod(web("w2", "b1")), b1) is None
    assert plugin.filter(what_if, incoming, a1) is not None, "back to 1/0"
    assert plugin.remove_pod(what_if, incoming, pod(web("w1", "a1")), a1) is None
    assert plugin.filter(what_if, incoming, a1) is None, "zones 0/0"


def test_add_pod_ignores_other_namespaces_and_unlabeled_nodes() -> None:
    nodes = [
        node_info(make_node("a1").zone("a").obj()),
        node_info(make_node("b1").zone("b").obj()),
        node_info(make_node("x").obj()),
    ]
    plugin = plugin_for(nodes)
    incoming = pod(make_pod("p").label("app", "web").spread(1, ZONE, selector=WEB).obj())
    state = CycleState()
    plugin.pre_filter(state, incoming, nodes)
    plugin.add_pod(state, incoming, pod(web("o1", "b1", namespace="other")), nodes[1])
    plugin.add_pod(state, incoming, pod(web("w1", "x")), nodes[2])
    assert plugin.filter(state, incoming, nodes[0]) is None
    assert plugin.filter(state, incoming, nodes[1]) is None


def test_add_pod_without_pre_filter_state_is_an_error() -> None:
    nodes = zones()
    plugin = plugin_for(nodes)
    incoming = pod(make_pod("p").obj())
    status = plugin.add_pod(CycleState(), incoming, pod(web("w", "a1")), nodes[0])
    assert status is not None
    assert status.is_error()


def test_critical_paths_track_two_domains_as_upstream() -> None:
    paths = CriticalPaths()
    for value, count in (("a", 3), ("b", 1), ("c", 2)):
        paths.update(value, count)
    assert (paths.values, paths.counts) == (["b", "c"], [1, 2])
    paths.update("c", 0)  # a tracked domain drops below the first: they swap
    assert (paths.values, paths.counts) == (["c", "b"], [0, 1])
    paths.update("a", 5)  # an untracked domain that is not smaller: ignored
    assert (paths.values, paths.counts) == (["c", "b"], [0, 1])
    # A tracked domain grows past an untracked one (a: 3): upstream keeps it.
    paths.update("b", 7)
    assert (paths.values, paths.counts) == (["c", "b"], [0, 7])
    clone = paths.clone()
    clone.update("c", 9)
    assert paths.counts == [0, 7], "clones are independent"
