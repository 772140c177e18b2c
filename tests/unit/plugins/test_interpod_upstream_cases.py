"""Scores cross-checked with the expectations of upstream's own tables
(``podtopologyspread/scoring_test.go`` and ``interpodaffinity/scoring_test.go``,
v1.36): the same situations, rebuilt with our builders, give the same
normalized scores."""

from __future__ import annotations

from typing import cast

import pytest

from plugins.inter_pod_affinity import InterPodAffinityArgs
from plugins.inter_pod_affinity import new as new_affinity
from plugins.pod_topology_spread import PodTopologySpreadArgs
from plugins.pod_topology_spread import new as new_spread
from scheduler.framework import CycleState, Handle, NodeScore, ScorePlugin
from tests.support.builders import PodBuilder, make_node, make_pod
from tests.support.informers import FakeStore
from tests.unit.plugins.support import (
    FakeHandle,
    FakeInformers,
    FakeSnapshot,
    Obj,
    namespace,
    node_info,
    pod,
)

HOST = "kubernetes.io/hostname"
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
SOFT = "ScheduleAnyway"


def node(name: str, *, hostname: bool = True, **labels: str) -> Obj:
    raw = make_node(name).obj()
    raw["metadata"]["labels"] = dict(labels)
    if hostname:
        raw["metadata"]["labels"][HOST] = name
    return raw


def on(node_name: str, count: int, *labels: str, prefix: str = "") -> list[Obj]:
    pods = []
    for index in range(count):
        builder = make_pod(f"{prefix or node_name}-{index}").node(node_name)
        for label in labels:
            builder.label(label, "")
        pods.append(builder.obj())
    return pods


def normalized(
    make: str,
    incoming: Obj,
    existing: list[Obj],
    feasible: list[Obj],
    *,
    failed: list[Obj] | None = None,
    stores: dict[str, FakeStore] | None = None,
) -> list[int]:
    infos = {raw["metadata"]["name"]: node_info(raw) for raw in [*feasible, *(failed or [])]}
    for index, raw in enumerate(existing):
        raw["metadata"]["uid"] = f"u{index}"
        infos[raw["spec"]["nodeName"]].add_pod(pod(raw))
    handle = cast(Handle, FakeHandle(FakeSnapshot(list(infos.values())), FakeInformers(stores)))
    plugin: ScorePlugin
    if make == "spread":
        plugin = new_spread(PodTopologySpreadArgs(), handle)
    else:
        plugin = new_affinity(InterPodAffinityArgs(), handle)
    candidates = [infos[raw["metadata"]["name"]] for raw in feasible]
    state = CycleState()
    target = pod(incoming)
    assert plugin.pre_score(state, target, candidates) is None  # type: ignore[attr-defined]
    scores = [NodeScore(info.name, plugin.score(state, target, info)[0]) for info in candidates]
    extensions = plugin.score_extensions()
    assert extensions is not None
    assert extensions.normalize_score(state, target, scores) is None
    return [entry.score for entry in scores]


def foo() -> Obj:
    return make_pod("p").label("foo", "").obj()


def spread(*constraints: tuple[int, str, Obj | None], labels: tuple[str, ...] = ("foo",)) -> Obj:
    builder = make_pod("p")
    for label in labels:
        builder.label(label, "")
    for max_skew, key, selector in constraints:
        builder.spread(max_skew, key, SOFT, selector=selector)
    return builder.obj()


ABCD = ["node-a", "node-b", "node-c", "node-d"]
SPREAD_2_1_0_3 = [*on("node-a", 2, "foo"), *on("node-b", 1, "foo"), *on("node-d", 3, "foo")]
SPREAD_4_3_2_1 = [
    *on("node-a", 4, "foo"),
    *on("node-b", 3, "foo"),
    *on("node-c", 2, "foo"),
    *on("node-d", 1, "foo"),
]
SPREAD_4_2_1_3 = [
    *on("node-a", 4, "foo"),
    *on("node-b", 2, "foo"),
    *on("node-x", 1, "foo"),
    *on("node-y", 3, "foo"),
]
SERVICE = FakeStore(
    [{"metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"foo": ""}}}]
)


@pytest.mark.parametrize(
    ("incoming", "existing", "feasible", "failed", "stores", "expected"),
    [
        pytest.param(
            spread((1, HOST, FOO)),
            SPREAD_2_1_0_3,
            [node(n) for n in ABCD],
            None,
            None,
            [20, 60, 100, 0],
            id="hostname 2/1/0/3",
        ),
        pytest.param(
            spread((1, HOST, None)),
            SPREAD_2_1_0_3,
            [node(n) for n in ABCD],
            None,
            None,
            [100, 100, 100, 100],
            id="absent selector counts nothing",
        ),
        pytest.param(
            spread((2, HOST, FOO)),
            SPREAD_2_1_0_3,
            [node(n) for n in ABCD],
            None,
            None,
            [33, 66, 100, 16],
            id="hostname 2/1/0/3 maxSkew 2",
        ),
        pytest.param(
            spread((3, HOST, FOO)),
            SPREAD_4_3_2_1,
            [node(n) for n in ABCD],
            None,
            None,
            [44, 66, 77, 100],
            id="hostname 4/3/2/1 maxSkew 3",
        ),
        pytest.param(
            foo(),
            SPREAD_4_3_2_1,
            [node(n) for n in ABCD],
            None,
            {"services": SERVICE},
            [44, 66, 77, 100],
            id="system defaults through a service, nodes without zone",
        ),
        pytest.param(
            spread((1, HOST, FOO)),
            SPREAD_4_2_1_3,
            [node("node-a"), node("node-b"), node("node-x")],
            [node("node-y")],
            None,
            [33, 83, 100],
            id="hostname, one node not feasible",
        ),
        pytest.param(
            spread((1, HOST, FOO)),
            SPREAD_4_2_1_3,
            [node("node-a"), node("node-b", hostname=False, n="node-b"), node("node-x")],
            [node("node-y")],
            None,
            [16, 0, 100],
            id="hostname, one node without the key",
        ),
        pytest.param(
            spread((1, "zone", FOO)),
            SPREAD_4_2_1_3,
            [
                node("node-a", zone="zone1"),
                node("node-b", zone="zone1"),
                node("node-x", zone="zone2"),
            ],
            [node("node-y", zone="zone2")],
            None,
            [75, 75, 100],
            id="zone, one node not feasible",
        ),
        pytest.param(
            spread((1, "zone", FOO), (1, HOST, FOO)),
            [
                *on("node-a", 2, "foo"),
                *on("node-b", 1, "foo"),
                *on("node-x", 2, "foo"),
                *on("node-y", 4, "foo"),
            ],
            [node("node-a", zone="zone1"), node("node-x", zone="zone2")],
            [node("node-b", zone="zone1"), node("node-y", zone="zone2")],
            None,
            [100, 63],
            id="zone and hostname",
        ),
        pytest.param(
            spread((1, "zone", FOO), (1, "zone", BAR), labels=("foo", "bar")),
            [
                *on("node-a", 1, "foo", "bar"),
                *on("node-a", 1, "foo", prefix="a2"),
                *on("node-b", 1, "foo", "bar"),
                *on("node-y", 1, "foo"),
                *on("node-y", 1, "foo", "bar", prefix="y2"),
                *on("node-y", 1, "foo", prefix="y3"),
            ],
            [
                node("node-a", hostname=False, zone="zone1"),
                node("node-x", hostname=False, zone="zone2"),
            ],
            [
                node("node-b", hostname=False, zone="zone1"),
                node("node-y", hostname=False, zone="zone2"),
            ],
            None,
            [85, 100],
            id="two zone constraints with different selectors",
        ),
    ],
)
def test_spread_scores_match_upstream(  # noqa: PLR0917 - one argument per table column
    incoming: Obj,
    existing: list[Obj],
    feasible: list[Obj],
    failed: list[Obj] | None,
    stores: dict[str, FakeStore] | None,
    expected: list[int],
) -> None:
    assert (
        normalized("spread", incoming, existing, feasible, failed=failed, stores=stores) == expected
    )


def _expr(key: str, operator: str, *values: str) -> Obj:
    found: Obj = {"key": key, "operator": operator}
    if values:
        found["values"] = list(values)
    return found


def _selector(*expressions: Obj) -> Obj:
    return {"matchExpressions": list(expressions)}


IN_S1 = _selector(_expr("security", "In", "S1"))
IN_S2 = _selector(_expr("security", "In", "S2"))
TEAM1 = {
    "namespaces": ["subteam2.team2"],
    "namespaceSelector": _selector(_expr("team", "In", "team1")),
}


def sec(name: str, node_name: str, value: str, namespace_name: str = "default") -> PodBuilder:
    """A pod labelled ``security=value``, bound to ``node_name`` unless empty."""
    builder = make_pod(name, namespace_name).label("security", value)
    return builder.node(node_name) if node_name else builder


NODES_3 = [
    node("node1", hostname=False, region="China"),
    node("node2", hostname=False, region="India"),
    node("node3", hostname=False, az="az1"),
]
NAMESPACES = {
    "namespaces": FakeStore(
        [namespace("subteam1.team1", team="team1"), namespace("subteam2.team2", team="team2")]
    )
}


@pytest.mark.parametrize(
    ("incoming", "existing", "expected"),
    [
        pytest.param(
            sec("p", "", "S1")
            .pod_affinity_term(
                "podAffinity",
                "region",
                _selector(_expr("security", "NotIn", "S1"), _expr("security", "In", "S2")),
                weight=8,
            )
            .pod_affinity_term(
                "podAffinity",
                "region",
                _selector(_expr("security", "Exists"), _expr("wrongkey", "DoesNotExist")),
                weight=2,
            )
            .obj(),
            [
                sec("a", "node1", "S1").obj(),
                sec("b", "node2", "S2").obj(),
                sec("c", "node3", "S1").obj(),
            ],
            [20, 100, 0],
            id="operators and partial matches",
        ),
        pytest.param(
            sec("p", "", "S2").obj(),
            [
                sec("a", "node1", "S1")
                .pod_affinity_term("podAffinity", "region", IN_S1, weight=5)
                .obj(),
                sec("b", "node2", "S2")
                .pod_affinity_term("podAffinity", "region", IN_S2, weight=6)
                .obj(),
            ],
            [0, 100, 0],
            id="symmetry of existing pods' preferred affinity",
        ),
        pytest.param(
            sec("p", "", "S1", "subteam1.team1").obj(),
            [
                sec("a", "node1", "S1")
                .pod_affinity_term("podAffinity", "region", IN_S1, weight=5, **TEAM1)
                .obj(),
                sec("b", "node2", "S2")
                .pod_affinity_term("podAffinity", "region", IN_S2, weight=6)
                .obj(),
            ],
            [100, 0, 0],
            id="symmetry through a namespace selector",
        ),
        pytest.param(
            sec("p", "", "S1", "subteam1.team1").obj(),
            [
                sec("a", "node1", "S1")
                .pod_affinity_term("podAntiAffinity", "region", IN_S1, weight=5, **TEAM1)
                .obj(),
                sec("b", "node2", "S2")
                .pod_affinity_term("podAffinity", "region", IN_S2, weight=6)
                .obj(),
            ],
            [0, 100, 100],
            id="anti-affinity symmetry through a namespace selector",
        ),
        pytest.param(
            sec("p", "", "S1").obj(),
            [
                sec("a", "node1", "S1")
                .pod_affinity_term(
                    "podAffinity", "region", _selector(_expr("security", "In", "S1", "value2"))
                )
                .pod_affinity_term(
                    "podAffinity",
                    "region",
                    _selector(_expr("security", "Exists"), _expr("wrongkey", "DoesNotExist")),
                )
                .obj(),
                sec("b", "node2", "S2")
                .pod_affinity_term(
                    "podAffinity", "region", _selector(_expr("security", "In", "S1", "value2"))
                )
                .pod_affinity_term(
                    "podAffinity",
                    "region",
                    _selector(_expr("security", "Exists"), _expr("wrongkey", "DoesNotExist")),
                )
                .obj(),
            ],
            [100, 100, 0],
            id="symmetry of existing pods' required affinity",
        ),
    ],
)
def test_affinity_scores_match_upstream(
    incoming: Obj, existing: list[Obj], expected: list[int]
) -> None:
    assert normalized("affinity", incoming, existing, NODES_3, stores=NAMESPACES) == expected
