"""TaintToleration: hard taints filter, PreferNoSchedule taints score (reversed)."""

from __future__ import annotations

import pytest

from plugins.taint_toleration import (
    NAME,
    REASON_UNTOLERATED,
    TaintToleration,
    default_normalize_score,
)
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    EventResource,
    NodeScore,
    QueueingHint,
)
from tests.support.builders import make_node, make_pod
from tests.unit.plugins.support import Obj, maybe_node, node_info, pod


@pytest.mark.parametrize(
    ("raw_node", "raw_pod", "code"),
    [
        pytest.param(make_node("n").obj(), make_pod("p").obj(), Code.SUCCESS, id="no taints"),
        pytest.param(
            make_node("n").taint("dedicated", "gpu").obj(),
            make_pod("p").obj(),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            id="NoSchedule taint not tolerated",
        ),
        pytest.param(
            make_node("n").taint("dedicated", "gpu", "NoExecute").obj(),
            make_pod("p").obj(),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            id="NoExecute taint not tolerated",
        ),
        pytest.param(
            make_node("n").taint("dedicated", "gpu", "PreferNoSchedule").obj(),
            make_pod("p").obj(),
            Code.SUCCESS,
            id="PreferNoSchedule never filters",
        ),
        pytest.param(
            make_node("n").taint("dedicated", "gpu").obj(),
            make_pod("p").toleration("dedicated", "gpu", "NoSchedule").obj(),
            Code.SUCCESS,
            id="tolerated by key, value and effect",
        ),
        pytest.param(
            make_node("n").taint("dedicated", "gpu").obj(),
            make_pod("p").toleration("dedicated", "cpu", "NoSchedule").obj(),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            id="toleration value differs",
        ),
        pytest.param(
            make_node("n").taint("dedicated", "gpu").obj(),
            make_pod("p").toleration("dedicated", operator="Exists").obj(),
            Code.SUCCESS,
            id="Exists toleration, any value and effect",
        ),
        pytest.param(
            make_node("n").taint("a", "1").taint("b", "2", "NoExecute").obj(),
            make_pod("p").toleration("a", "1").obj(),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            id="second taint not tolerated",
        ),
        pytest.param(
            make_node("n").taint("a", "1").taint("b", "2", "NoExecute").obj(),
            make_pod("p").toleration(operator="Exists").obj(),
            Code.SUCCESS,
            id="tolerate everything",
        ),
    ],
)
def test_filter(raw_node: Obj, raw_pod: Obj, code: Code) -> None:
    status = TaintToleration().filter(CycleState(), pod(raw_pod), node_info(raw_node))
    if code is Code.SUCCESS:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.reasons) == (code, (REASON_UNTOLERATED,))
        # Upstream since v1.35 (kubernetes PR #134740): no taint key/value in pod status.
        assert REASON_UNTOLERATED == "node(s) had untolerated taint(s)"


PREFER = "PreferNoSchedule"


@pytest.mark.parametrize(
    ("raw_pod", "nodes", "raw_scores", "normalized"),
    [
        pytest.param(
            make_pod("p").obj(),
            [
                make_node("n0").obj(),
                make_node("n1").taint("a", "1", PREFER).obj(),
                make_node("n2").taint("a", "1", PREFER).taint("b", "2", PREFER).obj(),
            ],
            [0, 1, 2],
            [100, 50, 0],
            id="fewer untolerated taints score higher",
        ),
        pytest.param(
            make_pod("p").obj(),
            [make_node("n0").taint("a", "1").obj(), make_node("n1").obj()],
            [0, 0],
            [100, 100],
            id="no PreferNoSchedule taints: all 100",
        ),
        pytest.param(
            make_pod("p").obj(),
            [
                make_node("n0").taint("a", "1", PREFER).obj(),
                make_node("n1").taint("a", "1", PREFER).taint("b", "1", PREFER).obj(),
                make_node("n2")
                .taint("a", "1", PREFER)
                .taint("b", "1", PREFER)
                .taint("c", "1", PREFER)
                .obj(),
            ],
            [1, 2, 3],
            [67, 34, 0],
            id="integer normalization truncates before reversing",
        ),
        pytest.param(
            make_pod("p").toleration("a", "1", PREFER).obj(),
            [
                make_node("n0").taint("a", "1", PREFER).obj(),
                make_node("n1").taint("b", "1", PREFER).obj(),
            ],
            [0, 1],
            [100, 0],
            id="PreferNoSchedule toleration",
        ),
        pytest.param(
            make_pod("p").toleration("a", operator="Exists").obj(),
            [
                make_node("n0").taint("a", "1", PREFER).obj(),
                make_node("n1").taint("b", "1", PREFER).obj(),
            ],
            [0, 1],
            [100, 0],
            id="toleration without effect counts",
        ),
        pytest.param(
            make_pod("p").toleration("a", "1", "NoSchedule").obj(),
            [
                make_node("n0").taint("a", "1", PREFER).obj(),
                make_node("n1").obj(),
            ],
            [1, 0],
            [0, 100],
            id="NoSchedule toleration does not count",
        ),
    ],
)
def test_score_and_normalize(
    raw_pod: Obj, nodes: list[Obj], raw_scores: list[int], normalized: list[int]
) -> None:
    plugin = TaintToleration()
    state = CycleState()
    the_pod = pod(raw_pod)
    infos = [node_info(raw) for raw in nodes]
    assert plugin.pre_score(state, the_pod, infos) is None
    scores = []
    for info in infos:
        value, status = plugin.score(state, the_pod, info)
        assert status is None
        scores.append(NodeScore(info.name, value))
    assert [entry.score for entry in scores] == raw_scores
    assert plugin.score_extensions() is plugin
    assert plugin.normalize_score(state, the_pod, scores) is None
    assert [entry.score for entry in scores] == normalized


def test_score_without_pre_score_is_an_error() -> None:
    _, status = TaintToleration().score(
        CycleState(), pod(make_pod("p").obj()), node_info(make_node("n").obj())
    )
    assert status is not None
    assert status.code is Code.ERROR


@pytest.mark.parametrize(
    ("scores", "reverse", "expected"),
    [
        pytest.param([0, 0], False, [0, 0], id="all zero stay zero"),
        pytest.param([0, 0], True, [100, 100], id="all zero reversed are max"),
        pytest.param([1, 2, 4], False, [25, 50, 100], id="scaled by the max"),
        pytest.param([1, 3], False, [33, 100], id="truncated"),
        pytest.param([1, 3], True, [67, 0], id="reversed after truncation"),
        pytest.param([], True, [], id="no nodes"),
    ],
)
def test_default_normalize_score(scores: list[int], reverse: bool, expected: list[int]) -> None:
    entries = [NodeScore(f"n{i}", s) for i, s in enumerate(scores)]
    default_normalize_score(100, reverse=reverse, scores=entries)
    assert [entry.score for entry in entries] == expected


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
            ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_ALLOCATABLE),
            False,
            id="NodeUpdateNodeAllocatable",
        ),
        pytest.param(
            ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.UPDATE_POD_TOLERATION),
            True,
            id="UnscheduledPodUpdatePodToleration",
        ),
    ],
)
def test_events(incoming: ClusterEvent, matches: bool) -> None:
    registered = TaintToleration().events_to_register()
    assert any(r.event.matches(incoming) for r in registered) is matches


TAINTED = make_node("n").taint("dedicated", "gpu").obj()
CLEAN = make_node("n").obj()
SOFT = make_node("n").taint("dedicated", "gpu", PREFER).obj()


@pytest.mark.parametrize(
    ("raw_pod", "old", "new", "hint"),
    [
        pytest.param(make_pod("p").obj(), None, CLEAN, QueueingHint.QUEUE, id="clean node added"),
        pytest.param(
            make_pod("p").obj(), None, TAINTED, QueueingHint.QUEUE_SKIP, id="tainted node added"
        ),
        pytest.param(make_pod("p").obj(), TAINTED, CLEAN, QueueingHint.QUEUE, id="taint removed"),
        pytest.param(
            make_pod("p").obj(),
            TAINTED,
            SOFT,
            QueueingHint.QUEUE,
            id="taint softened to PreferNoSchedule",
        ),
        pytest.param(
            make_pod("p").obj(), CLEAN, TAINTED, QueueingHint.QUEUE_SKIP, id="taint added"
        ),
        pytest.param(
            make_pod("p").obj(), CLEAN, CLEAN, QueueingHint.QUEUE_SKIP, id="was tolerated already"
        ),
        pytest.param(
            make_pod("p").toleration("dedicated", "gpu", "NoSchedule").obj(),
            None,
            TAINTED,
            QueueingHint.QUEUE,
            id="tainted node added, tolerated",
        ),
    ],
)
def test_node_change_hint(raw_pod: Obj, old: Obj | None, new: Obj, hint: QueueingHint) -> None:
    plugin = TaintToleration()
    assert (
        plugin.is_schedulable_after_node_change(pod(raw_pod), maybe_node(old), maybe_node(new))
        is hint
    )


@pytest.mark.parametrize(
    ("updated_uid", "hint"),
    [
        pytest.param("waiting", QueueingHint.QUEUE, id="this pod gained a toleration"),
        pytest.param("other", QueueingHint.QUEUE_SKIP, id="another pod gained a toleration"),
    ],
)
def test_pod_toleration_hint(updated_uid: str, hint: QueueingHint) -> None:
    waiting = pod(make_pod("w").uid("waiting").obj())
    old = pod(make_pod("x").uid(updated_uid).obj())
    new = pod(make_pod("x").uid(updated_uid).toleration("k", operator="Exists").obj())
    assert TaintToleration().is_schedulable_after_pod_toleration_change(waiting, old, new) is hint


def test_name() -> None:
    assert TaintToleration.name == NAME == "TaintToleration"
