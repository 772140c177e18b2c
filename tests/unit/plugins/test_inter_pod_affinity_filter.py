"""InterPodAffinity PreFilter/Filter against hand-computed outcomes with the
upstream reasons, AddPod/RemovePod, and queueing hints."""

from __future__ import annotations

from typing import cast

import pytest

from plugins.inter_pod_affinity import (
    REASON_AFFINITY_NOT_MATCH,
    REASON_ANTI_AFFINITY_NOT_MATCH,
    REASON_EXISTING_ANTI_AFFINITY_NOT_MATCH,
    InterPodAffinity,
    InterPodAffinityArgs,
    new,
)
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    EventResource,
    Handle,
    NodeInfo,
    QueueingHint,
    Status,
)
from tests.support.builders import make_node, make_pod
from tests.support.informers import FakeStore
from tests.unit.plugins.support import (
    FakeHandle,
    FakeInformers,
    FakeSnapshot,
    Obj,
    maybe_node,
    namespace,
    node_info,
    pod,
)

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
DB = {"matchLabels": {"app": "db"}}
WEB = {"matchLabels": {"app": "web"}}

OK = (Code.SUCCESS, "")
AFFINITY = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_AFFINITY_NOT_MATCH)
ANTI = (Code.UNSCHEDULABLE, REASON_ANTI_AFFINITY_NOT_MATCH)
EXISTING = (Code.UNSCHEDULABLE, REASON_EXISTING_ANTI_AFFINITY_NOT_MATCH)

NAMESPACES = FakeStore(
    [namespace("default", team="a"), namespace("other", team="b"), namespace("third", team="b")]
)


def labeled(name: str, node: str, namespace: str = "default", **labels: str) -> Obj:
    builder = make_pod(name, namespace).node(node)
    for key, value in labels.items():
        builder.label(key, value)
    return builder.obj()


def plugin_for(nodes: list[NodeInfo], args: InterPodAffinityArgs | None = None) -> InterPodAffinity:
    handle = FakeHandle(FakeSnapshot(nodes), FakeInformers({"namespaces": NAMESPACES}))
    return new(args or InterPodAffinityArgs(), cast(Handle, handle))


def verdicts(raw_pod: Obj, nodes: list[NodeInfo]) -> dict[str, tuple[Code, str]]:
    plugin = plugin_for(nodes)
    state = CycleState()
    incoming = pod(raw_pod)
    _, status = plugin.pre_filter(state, incoming, nodes)
    if status is not None and status.is_skip():  # the framework runs no Filter then
        return {info.name: OK for info in nodes}
    assert status is None, status
    result = {}
    for info in nodes:
        verdict = plugin.filter(state, incoming, info) or Status.success()
        result[info.name] = (verdict.code, verdict.message())
    return result


def cluster(*pods_on: tuple[str, Obj]) -> list[NodeInfo]:
    """a1, a2 in zone a; b1 in zone b; x without a zone; ``pods_on`` = (node, pod)."""
    nodes = {
        "a1": make_node("a1").zone("a").obj(),
        "a2": make_node("a2").zone("a").obj(),
        "b1": make_node("b1").zone("b").obj(),
        "x": make_node("x").obj(),
    }
    return [
        node_info(raw, *(p for where, p in pods_on if where == name)) for name, raw in nodes.items()
    ]


@pytest.mark.parametrize(
    ("raw_pod", "nodes", "expected"),
    [
        pytest.param(
            make_pod("p").pod_affinity_term("podAffinity", ZONE, DB).obj(),
            cluster(("a1", labeled("d", "a1", app="db"))),
            {"a1": OK, "a2": OK, "b1": AFFINITY, "x": AFFINITY},
            id="required affinity: the zone of a db pod; no zone label fails",
        ),
        pytest.param(
            make_pod("p").label("app", "db").pod_affinity_term("podAffinity", ZONE, DB).obj(),
            cluster(),
            {"a1": OK, "a2": OK, "b1": OK, "x": AFFINITY},
            id="first pod of a group that selects itself goes anywhere with the key",
        ),
        pytest.param(
            make_pod("p").pod_affinity_term("podAffinity", ZONE, DB).obj(),
            cluster(),
            {"a1": AFFINITY, "a2": AFFINITY, "b1": AFFINITY, "x": AFFINITY},
            id="no matching pod and not self-matching",
        ),
        pytest.param(
            make_pod("p").label("app", "db").pod_affinity_term("podAffinity", ZONE, DB).obj(),
            cluster(("b1", labeled("d", "b1", app="db"))),
            {"a1": AFFINITY, "a2": AFFINITY, "b1": OK, "x": AFFINITY},
            id="self-match exception only while no pod matches",
        ),
        pytest.param(
            make_pod("p")
            .pod_affinity_term("podAffinity", ZONE, DB)
            .pod_affinity_term("podAffinity", HOST, {"matchLabels": {"tier": "1"}})
            .obj(),
            cluster(
                ("a1", labeled("d", "a1", app="db", tier="1")), ("a2", labeled("e", "a2", app="db"))
            ),
            # One pod must match all terms: only d does, on a1.
            {"a1": OK, "a2": AFFINITY, "b1": AFFINITY, "x": AFFINITY},
            id="all terms must match the same pod",
        ),
        pytest.param(
            make_pod("p").required_pod_anti_affinity(HOST, app="web").obj(),
            cluster(("a1", labeled("w", "a1", app="web"))),
            {"a1": ANTI, "a2": OK, "b1": OK, "x": OK},
            id="required anti-affinity per host",
        ),
        pytest.param(
            make_pod("p").required_pod_anti_affinity(ZONE, app="web").obj(),
            cluster(("a1", labeled("w", "a1", app="web"))),
            {"a1": ANTI, "a2": ANTI, "b1": OK, "x": OK},
            id="required anti-affinity per zone; no zone label passes",
        ),
        pytest.param(
            make_pod("p").label("app", "web").obj(),
            cluster(
                ("a1", make_pod("q").node("a1").required_pod_anti_affinity(ZONE, app="web").obj())
            ),
            {"a1": EXISTING, "a2": EXISTING, "b1": OK, "x": OK},
            id="existing pod's anti-affinity keeps the pod out of its zone",
        ),
        pytest.param(
            make_pod("p", "other").label("app", "web").obj(),
            cluster(
                ("a1", make_pod("q").node("a1").required_pod_anti_affinity(ZONE, app="web").obj())
            ),
            {"a1": OK, "a2": OK, "b1": OK, "x": OK},
            id="existing anti-affinity is namespaced to its pod",
        ),
        pytest.param(
            make_pod("p", "other").label("app", "web").obj(),
            cluster(
                (
                    "a1",
                    make_pod("q")
                    .node("a1")
                    .pod_affinity_term(
                        "podAntiAffinity",
                        ZONE,
                        WEB,
                        namespaceSelector={"matchLabels": {"team": "b"}},
                    )
                    .obj(),
                )
            ),
            {"a1": EXISTING, "a2": EXISTING, "b1": OK, "x": OK},
            id="existing anti-affinity reaches namespaces by their labels",
        ),
        pytest.param(
            make_pod("p").pod_affinity_term("podAffinity", ZONE, DB, namespaces=["other"]).obj(),
            cluster(
                ("a1", labeled("d", "a1", app="db")), ("b1", labeled("e", "b1", "other", app="db"))
            ),
            {"a1": AFFINITY, "a2": AFFINITY, "b1": OK, "x": AFFINITY},
            id="term namespaces replace the pod's own",
        ),
        pytest.param(
            make_pod("p")
            .pod_affinity_term(
                "podAffinity", ZONE, DB, namespaceSelector={"matchLabels": {"team": "b"}}
            )
            .obj(),
            cluster(("a1", labeled("d", "a1", "third", app="db"))),
            {"a1": OK, "a2": OK, "b1": AFFINITY, "x": AFFINITY},
            id="namespaceSelector resolved through the namespaces store",
        ),
        pytest.param(
            make_pod("p").pod_affinity_term("podAffinity", ZONE, DB, namespaceSelector={}).obj(),
            cluster(("b1", labeled("d", "b1", "third", app="db"))),
            {"a1": AFFINITY, "a2": AFFINITY, "b1": OK, "x": AFFINITY},
            id="empty namespaceSelector means all namespaces",
        ),
        pytest.param(
            make_pod("p")
            .label("app", "web")
            .label("version", "v2")
            .pod_affinity_term("podAntiAffinity", HOST, WEB, matchLabelKeys=["version"])
            .obj(),
            cluster(
                ("a1", labeled("w1", "a1", app="web", version="v1")),
                ("b1", labeled("w2", "b1", app="web", version="v2")),
            ),
            {"a1": OK, "a2": OK, "b1": ANTI, "x": OK},
            id="matchLabelKeys: only pods of the same version repel",
        ),
        pytest.param(
            make_pod("p")
            .label("tenant", "t1")
            .pod_affinity_term(
                "podAntiAffinity",
                HOST,
                {"matchExpressions": [{"key": "tenant", "operator": "Exists"}]},
                mismatchLabelKeys=["tenant"],
            )
            .obj(),
            cluster(
                ("a1", labeled("o", "a1", tenant="t2")), ("b1", labeled("s", "b1", tenant="t1"))
            ),
            {"a1": ANTI, "a2": OK, "b1": OK, "x": OK},
            id="mismatchLabelKeys: only other tenants repel",
        ),
        pytest.param(
            make_pod("p")
            .label("app", "web")
            .pod_affinity_term("podAffinity", ZONE, DB)
            .required_pod_anti_affinity(HOST, app="web")
            .obj(),
            cluster(
                (
                    "a1",
                    labeled("d", "a1", app="db"),
                ),
                ("a1", labeled("w", "a1", app="web")),
                ("b1", make_pod("q").node("b1").required_pod_anti_affinity(ZONE, app="web").obj()),
            ),
            # Affinity first (zone a only), then own anti-affinity (not a1).
            {"a1": ANTI, "a2": OK, "b1": AFFINITY, "x": AFFINITY},
            id="affinity is checked before anti-affinity",
        ),
    ],
)
def test_filter(raw_pod: Obj, nodes: list[NodeInfo], expected: dict[str, tuple[Code, str]]) -> None:
    assert verdicts(raw_pod, nodes) == expected


def test_pre_filter_skips_when_nothing_applies() -> None:
    nodes = cluster(("a1", labeled("w", "a1", app="web")))
    status = plugin_for(nodes).pre_filter(CycleState(), pod(make_pod("p").obj()), nodes)[1]
    assert status is not None
    assert status.is_skip()


@pytest.mark.parametrize(
    ("kind", "bad"),
    [
        pytest.param(
            "podAffinity", {"matchExpressions": [{"key": "app", "operator": "In"}]}, id="no values"
        ),
        pytest.param(
            "podAffinity",
            {"matchExpressions": [{"key": "app", "operator": "In", "values": ["-web"]}]},
            id="invalid value",
        ),
        pytest.param("podAntiAffinity", {"matchLabels": {"-app": "web"}}, id="invalid key"),
    ],
)
def test_pre_filter_rejects_malformed_terms(kind: str, bad: Obj) -> None:
    nodes = cluster()
    incoming = pod(make_pod("p").pod_affinity_term(kind, ZONE, bad).obj())
    status = plugin_for(nodes).pre_filter(CycleState(), incoming, nodes)[1]
    assert status is not None
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message().startswith("parsing pod: ")


def test_add_and_remove_pod_update_every_count() -> None:
    nodes = cluster(("a1", labeled("w", "a1", app="web")))
    a1, a2, b1, _ = nodes
    plugin = plugin_for(nodes)
    incoming = pod(
        make_pod("p")
        .label("app", "web")
        .pod_affinity_term("podAffinity", ZONE, DB)
        .required_pod_anti_affinity(HOST, app="web")
        .obj()
    )
    state = CycleState()
    plugin.pre_filter(state, incoming, nodes)
    assert plugin.filter(state, incoming, b1) == Status.unresolvable(REASON_AFFINITY_NOT_MATCH)

    what_if = state.clone()
    db = pod(labeled("d", "b1", app="db"))
    plugin.add_pod(what_if, incoming, db, b1)
    assert plugin.filter(what_if, incoming, b1) is None, "a db pod in zone b now"
    assert plugin.filter(state, incoming, b1) is not None, "the original state is untouched"

    plugin.add_pod(what_if, incoming, pod(labeled("w2", "b1", app="web")), b1)
    assert plugin.filter(what_if, incoming, b1) == Status.unschedulable(
        REASON_ANTI_AFFINITY_NOT_MATCH
    )

    blocker = pod(make_pod("q").node("a2").required_pod_anti_affinity(ZONE, app="web").obj())
    plugin.add_pod(what_if, incoming, db, a2)
    plugin.remove_pod(what_if, incoming, pod(labeled("w", "a1", app="web")), a1)
    assert plugin.filter(what_if, incoming, a2) is None
    plugin.add_pod(what_if, incoming, blocker, a2)
    assert plugin.filter(what_if, incoming, a2) == Status.unschedulable(
        REASON_EXISTING_ANTI_AFFINITY_NOT_MATCH
    )
    plugin.remove_pod(what_if, incoming, blocker, a2)
    assert plugin.filter(what_if, incoming, a2) is None


def test_removing_the_last_matching_pod_restores_the_first_pod_exception() -> None:
    nodes = cluster(("a1", labeled("d", "a1", app="db")))
    a1, _, b1, _ = nodes
    plugin = plugin_for(nodes)
    incoming = pod(
        make_pod("p").label("app", "db").pod_affinity_term("podAffinity", ZONE, DB).obj()
    )
    state = CycleState()
    plugin.pre_filter(state, incoming, nodes)
    assert plugin.filter(state, incoming, b1) is not None
    plugin.remove_pod(state, incoming, pod(labeled("d", "a1", app="db")), a1)
    assert plugin.filter(state, incoming, b1) is None, "no db pod left: the group starts anew"


# ------------------------------------------------------------------ hints
AFFINE = (
    make_pod("p")
    .uid("p")
    .pod_affinity_term("podAffinity", ZONE, DB)
    .required_pod_anti_affinity(HOST, app="web")
    .obj()
)


def test_registered_events() -> None:
    events = [r.event for r in plugin_for([]).events_to_register()]
    assert events == [
        ClusterEvent(
            EventResource.POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
        ),
        ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
    ]


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(None, labeled("d", "n1", app="db"), QueueingHint.QUEUE, id="affine pod bound"),
        pytest.param(
            None, labeled("w", "n1", app="web"), QueueingHint.QUEUE_SKIP, id="unrelated pod bound"
        ),
        pytest.param(
            None,
            make_pod("d").label("app", "db").obj(),
            QueueingHint.QUEUE_SKIP,
            id="unscheduled pod",
        ),
        pytest.param(
            labeled("w", "n1", app="web"), None, QueueingHint.QUEUE, id="repelling pod deleted"
        ),
        pytest.param(
            labeled("d", "n1", app="db"), None, QueueingHint.QUEUE_SKIP, id="affine pod deleted"
        ),
        pytest.param(
            labeled("d", "n1", app="x"),
            labeled("d", "n1", app="db"),
            QueueingHint.QUEUE,
            id="label now affine",
        ),
        pytest.param(
            labeled("w", "n1", app="web"),
            labeled("w", "n1", app="x"),
            QueueingHint.QUEUE,
            id="label no longer repels",
        ),
        pytest.param(
            labeled("w", "n1", app="x"),
            labeled("w", "n1", app="y"),
            QueueingHint.QUEUE_SKIP,
            id="irrelevant label",
        ),
    ],
)
def test_pod_change_hint(old: Obj | None, new: Obj | None, hint: QueueingHint) -> None:
    before = None if old is None else pod(old)
    after = None if new is None else pod(new)
    assert plugin_for([]).is_schedulable_after_pod_change(pod(AFFINE), before, after) is hint


def test_deleted_pod_whose_anti_affinity_blocked_the_pod_queues_it() -> None:
    blocker = make_pod("q").node("n1").required_pod_anti_affinity(ZONE, app="web").obj()
    target = pod(make_pod("p").uid("p").label("app", "web").obj())
    assert (
        plugin_for([]).is_schedulable_after_pod_change(target, pod(blocker), None)
        is QueueingHint.QUEUE
    )


def test_own_label_change_queues() -> None:
    target = pod(AFFINE)
    changed = pod(make_pod("p").uid("p").label("x", "1").obj())
    assert (
        plugin_for([]).is_schedulable_after_pod_change(target, target, changed)
        is QueueingHint.QUEUE
    )


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(
            None,
            make_node("n").zone("a").obj(),
            QueueingHint.QUEUE,
            id="node with affinity key added",
        ),
        pytest.param(
            None, make_node("n").obj(), QueueingHint.QUEUE, id="any node added helps anti-affinity"
        ),
        pytest.param(
            make_node("n").obj(),
            make_node("n").zone("a").obj(),
            QueueingHint.QUEUE,
            id="affinity key added",
        ),
        pytest.param(
            make_node("n").zone("a").obj(),
            make_node("n").zone("b").obj(),
            QueueingHint.QUEUE,
            id="zone changed",
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
    assert (
        plugin_for([]).is_schedulable_after_node_change(
            pod(AFFINE), maybe_node(old), maybe_node(new)
        )
        is hint
    )


def test_node_added_without_keys_skips_for_affinity_only_pods() -> None:
    target = pod(make_pod("p").pod_affinity_term("podAffinity", ZONE, DB).obj())
    hint = plugin_for([]).is_schedulable_after_node_change(
        target, None, maybe_node(make_node("n").obj())
    )
    assert hint is QueueingHint.QUEUE_SKIP
