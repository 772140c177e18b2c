"""InterPodAffinity PreScore/Score/NormalizeScore against hand-computed values,
and its arguments."""

from __future__ import annotations

from typing import cast

import pydantic
import pytest

from plugins.inter_pod_affinity import InterPodAffinity, InterPodAffinityArgs, new
from plugins.inter_pod_affinity.scoring import normalize
from scheduler.framework import Code, CycleState, Handle, NodeInfo, NodeScore
from tests.support.builders import make_node, make_pod
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

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
DB = {"matchLabels": {"app": "db"}}
WEB = {"matchLabels": {"app": "web"}}


def labeled(name: str, node: str, **labels: str) -> Obj:
    builder = make_pod(name).node(node)
    for key, value in labels.items():
        builder.label(key, value)
    return builder.obj()


def cluster(*pods_on: tuple[str, Obj]) -> list[NodeInfo]:
    """a1, a2 in zone a; b1 in zone b; ``pods_on`` = (node, pod)."""
    nodes = {
        "a1": make_node("a1").zone("a").obj(),
        "a2": make_node("a2").zone("a").obj(),
        "b1": make_node("b1").zone("b").obj(),
    }
    return [
        node_info(raw, *(p for where, p in pods_on if where == name)) for name, raw in nodes.items()
    ]


def plugin_for(nodes: list[NodeInfo], **args: object) -> InterPodAffinity:
    stores = {"namespaces": FakeStore([namespace("default")])}
    handle = FakeHandle(FakeSnapshot(nodes), FakeInformers(stores))
    return new(InterPodAffinityArgs.model_validate(args), cast(Handle, handle))


def scores(
    raw_pod: Obj, nodes: list[NodeInfo], **args: object
) -> tuple[list[int], list[int]] | None:
    """(raw, normalized) scores over ``nodes``, or None when PreScore skips."""
    plugin = plugin_for(nodes, **args)
    state = CycleState()
    incoming = pod(raw_pod)
    status = plugin.pre_score(state, incoming, nodes)
    if status is not None and status.is_skip():
        return None
    assert status is None, status
    raw = []
    for info in nodes:
        value, score_status = plugin.score(state, incoming, info)
        assert score_status is None
        raw.append(value)
    entries = [NodeScore(info.name, value) for info, value in zip(nodes, raw, strict=True)]
    assert plugin.normalize_score(state, incoming, entries) is None
    return raw, [entry.score for entry in entries]


@pytest.mark.parametrize(
    ("raw_pod", "nodes", "args", "expected"),
    [
        pytest.param(
            make_pod("p").pod_affinity_term("podAffinity", ZONE, DB, weight=10).obj(),
            cluster(("a1", labeled("d", "a1", app="db"))),
            {},
            ([10, 10, 0], [100, 100, 0]),
            id="preferred affinity: +weight for the zone of a db pod",
        ),
        pytest.param(
            make_pod("p").pod_affinity_term("podAntiAffinity", HOST, WEB, weight=5).obj(),
            cluster(("a1", labeled("w", "a1", app="web"))),
            {},
            ([-5, 0, 0], [0, 100, 100]),
            id="preferred anti-affinity: -weight for the host of a web pod",
        ),
        pytest.param(
            make_pod("p")
            .pod_affinity_term("podAffinity", ZONE, DB, weight=10)
            .pod_affinity_term("podAntiAffinity", HOST, WEB, weight=4)
            .obj(),
            cluster(
                ("a1", labeled("d", "a1", app="db")),
                ("a1", labeled("w", "a1", app="web")),
                ("b1", labeled("d2", "b1", app="db")),
                ("b1", labeled("d3", "b1", app="db")),
            ),
            {},
            # a1: zone a 10 - host a1 4 = 6; a2: 10; b1: zone b 20.
            # Normalized (min 6, max 20): a1 0, a2 100 x 4/14 = 28, b1 100.
            ([6, 10, 20], [0, 28, 100]),
            id="terms add up per topology pair",
        ),
        pytest.param(
            make_pod("p").label("app", "web").obj(),
            cluster(
                ("b1", make_pod("q").node("b1").pod_affinity_term("podAffinity", ZONE, WEB).obj())
            ),
            {},
            ([0, 0, 1], [0, 0, 100]),
            id="existing pod's required affinity counts hardPodAffinityWeight (1)",
        ),
        pytest.param(
            make_pod("p").label("app", "web").obj(),
            cluster(
                ("b1", make_pod("q").node("b1").pod_affinity_term("podAffinity", ZONE, WEB).obj())
            ),
            {"hardPodAffinityWeight": 7},
            ([0, 0, 7], [0, 0, 100]),
            id="hardPodAffinityWeight 7",
        ),
        pytest.param(
            make_pod("p").label("app", "web").obj(),
            cluster(
                ("b1", make_pod("q").node("b1").pod_affinity_term("podAffinity", ZONE, WEB).obj())
            ),
            {"hardPodAffinityWeight": 0},
            None,
            id="hardPodAffinityWeight 0: nothing to score, Skip",
        ),
        pytest.param(
            make_pod("p").label("app", "web").obj(),
            cluster(
                (
                    "a2",
                    make_pod("q")
                    .node("a2")
                    .pod_affinity_term("podAffinity", HOST, WEB, weight=3)
                    .obj(),
                ),
                (
                    "b1",
                    make_pod("r")
                    .node("b1")
                    .pod_affinity_term("podAntiAffinity", ZONE, WEB, weight=8)
                    .obj(),
                ),
            ),
            {},
            # a2: +3 (host a2); b1: -8 (zone b). Normalized (min -8, max 3):
            # a1 100 x 8/11 = 72, a2 100, b1 0.
            ([0, 3, -8], [72, 100, 0]),
            id="existing pods' preferred terms that select the pod",
        ),
        pytest.param(
            make_pod("p").label("app", "web").obj(),
            cluster(
                (
                    "a2",
                    make_pod("q")
                    .node("a2")
                    .pod_affinity_term("podAffinity", HOST, WEB, weight=3)
                    .obj(),
                )
            ),
            {"ignorePreferredTermsOfExistingPods": True},
            None,
            id="ignorePreferredTermsOfExistingPods without own terms: Skip",
        ),
        pytest.param(
            make_pod("p").obj(),
            cluster(("a1", labeled("w", "a1", app="web"))),
            {},
            None,
            id="no terms on either side: Skip",
        ),
        pytest.param(
            make_pod("p").pod_affinity_term("podAffinity", ZONE, DB, weight=10).obj(),
            cluster(("a1", labeled("w", "a1", app="web"))),
            {},
            None,
            id="no pod matches the preferred terms: Skip",
        ),
    ],
)
def test_score(
    raw_pod: Obj,
    nodes: list[NodeInfo],
    args: dict[str, object],
    expected: tuple[list[int], list[int]] | None,
) -> None:
    assert scores(raw_pod, nodes, **args) == expected


@pytest.mark.parametrize(
    ("kind", "selector", "problem"),
    [
        pytest.param(
            "podAffinity",
            {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "-x"]}]},
            'values[1]: Invalid value: "-x"',
            id="invalid value in a preferred affinity term",
        ),
        pytest.param(
            "podAntiAffinity",
            {"matchLabels": {"a/b/c": "web"}},
            'key: Invalid value: "a/b/c"',
            id="invalid key in a preferred anti-affinity term",
        ),
    ],
)
def test_pre_score_errors_on_an_invalid_preferred_selector(
    kind: str, selector: Obj, problem: str
) -> None:
    nodes = cluster()
    incoming = pod(make_pod("p").pod_affinity_term(kind, ZONE, selector, weight=5).obj())

    status = plugin_for(nodes).pre_score(CycleState(), incoming, nodes)

    assert status is not None
    assert status.code is Code.ERROR
    assert status.message().startswith("failed to parse pod: ")
    assert problem in status.message()


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        pytest.param(
            [0, 57, 100], [0, 56, 100], id="float truncation as upstream: 100 x 0.57 = 56.99"
        ),
        pytest.param([5, 5, 5], [0, 0, 0], id="all equal: 0"),
        pytest.param([-3, 0, 3], [0, 50, 100], id="negative scores"),
        pytest.param([], [], id="no nodes"),
    ],
)
def test_normalize(values: list[int], expected: list[int]) -> None:
    assert normalize(values) == expected


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        pytest.param(
            {"hardPodAffinityWeight": 101}, "hardPodAffinityWeight", id="weight above 100"
        ),
        pytest.param({"hardPodAffinityWeight": -1}, "hardPodAffinityWeight", id="negative weight"),
        pytest.param({"unknown": 1}, "unknown", id="unknown field"),
    ],
)
def test_invalid_args_name_the_field(raw: Obj, field: str) -> None:
    with pytest.raises(pydantic.ValidationError) as error:
        InterPodAffinityArgs.model_validate(raw)
    assert field in str(error.value)


def test_default_args() -> None:
    args = InterPodAffinityArgs.model_validate({})
    assert (args.hard_pod_affinity_weight, args.ignore_preferred_terms_of_existing_pods) == (
        1,
        False,
    )
