"""Framework: PreScore Skip, Score with weights, NormalizeScore and the
[0, 100] range check, with upstream's error messages."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

import pytest

from scheduler.framework import Code, CycleState, NodeScore, Pod, SignPlugin, Status
from tests.support.objects import node_info, pod
from tests.unit.engine.plugins import PreScoreStub, ScoreStub, make_framework

POD = pod("p")
NODES = [node_info("n1"), node_info("n2")]


def invert(scores: list[NodeScore]) -> Status | None:
    """Rewrite in place: 100 minus the raw score."""
    for item in scores:
        item.score = 100 - item.score
    return None


def overflow(scores: list[NodeScore]) -> Status | None:
    scores[1].score = 101
    return None


def failing(scores: list[NodeScore]) -> Status | None:
    return Status.as_error("cannot normalize")


@pytest.mark.parametrize(
    ("plugins", "skip", "code", "expected"),
    [
        pytest.param([PreScoreStub("A"), PreScoreStub("B")], set(), Code.SUCCESS, "", id="all ok"),
        pytest.param(
            [PreScoreStub("A", Status.skip()), PreScoreStub("B", Status.skip())],
            {"A", "B"},
            Code.SUCCESS,
            "",
            id="skip marks the plugin's Score skipped",
        ),
        pytest.param(
            [PreScoreStub("A", Status.unschedulable("no")), PreScoreStub("B")],
            set(),
            Code.ERROR,
            'running PreScore plugin "A": no',
            id="anything else is an error, even a rejection",
        ),
        pytest.param(
            [PreScoreStub("A", raises=RuntimeError("kaput"))],
            set(),
            Code.ERROR,
            'running PreScore plugin "A": kaput',
            id="a raising plugin is an error",
        ),
    ],
)
def test_pre_score(plugins: list[PreScoreStub], skip: set[str], code: Code, expected: str) -> None:
    state = CycleState()
    status = make_framework(pre_score=plugins).run_pre_score(state, POD, NODES)
    assert (Code.SUCCESS if status is None else status.code) == code
    assert ("" if status is None else status.message()) == expected
    assert state.skip_score_plugins == skip


@dataclass(frozen=True)
class ScoreCase:
    plugins: list[ScoreStub]
    weights: dict[str, int] = field(default_factory=dict)
    skip: frozenset[str] = frozenset()
    totals: dict[str, int] = field(default_factory=dict)
    weighted: dict[str, dict[str, int]] = field(default_factory=dict)
    error: str = ""


SCORE_CASES = [
    pytest.param(
        ScoreCase(
            [ScoreStub("A", {"n1": 10, "n2": 20}), ScoreStub("B", {"n1": 5, "n2": 0})],
            weights={"A": 2},
            totals={"n1": 25, "n2": 40},
            weighted={"n1": {"A": 20, "B": 5}, "n2": {"A": 40, "B": 0}},
        ),
        id="weighted sum; weight 1 by default",
    ),
    pytest.param(
        ScoreCase(
            [ScoreStub("A", {"n1": 10, "n2": 30}, normalize=invert)],
            weights={"A": 3},
            totals={"n1": 270, "n2": 210},
            weighted={"n1": {"A": 270}, "n2": {"A": 210}},
        ),
        id="normalized before weighing",
    ),
    pytest.param(
        ScoreCase(
            [ScoreStub("A", {"n1": 1}), ScoreStub("B", {"n1": 1000})],
            skip=frozenset({"B"}),
            totals={"n1": 1, "n2": 0},
            weighted={"n1": {"A": 1}, "n2": {"A": 0}},
        ),
        id="a plugin skipped at PreScore is not run",
    ),
    pytest.param(
        ScoreCase(
            [ScoreStub("A", {"n1": 100, "n2": 7}, normalize=overflow)],
            error='applying score defaultWeights on Score plugins: plugin "A" returns an '
            "invalid score 101, it should in the range of [0, 100] after normalizing",
        ),
        id="above 100 after normalizing",
    ),
    pytest.param(
        ScoreCase(
            [ScoreStub("A", {"n1": 50}), ScoreStub("B", {"n2": -1})],
            error='applying score defaultWeights on Score plugins: plugin "B" returns an '
            "invalid score -1, it should in the range of [0, 100] after normalizing",
        ),
        id="negative without normalizing",
    ),
    pytest.param(
        ScoreCase(
            [ScoreStub("A", status=Status.as_error("no data"))],
            error='running Score plugins: plugin "A" failed with: no data',
        ),
        id="score error",
    ),
    pytest.param(
        ScoreCase(
            [ScoreStub("A", status=Status.unschedulable("rejection"))],
            error='running Score plugins: plugin "A" failed with: rejection',
        ),
        id="a rejection from Score is an error too",
    ),
    pytest.param(
        ScoreCase(
            [ScoreStub("A", raises=ZeroDivisionError("division by zero"))],
            error='running Score plugins: plugin "A" failed with: division by zero',
        ),
        id="a raising plugin is an error",
    ),
    pytest.param(
        ScoreCase(
            [ScoreStub("A", {"n1": 1}, normalize=failing)],
            error='running Normalize on Score plugins: plugin "A" failed with: cannot normalize',
        ),
        id="normalize error",
    ),
]


class SignedScoreStub(ScoreStub, SignPlugin):
    """A ScoreStub that signs every pod alike: its raw scores are reused per
    node, and a cycle whose plugins all sign is scored from one row per node."""

    def sign_pod(self, pod: Pod) -> Hashable:
        return "any pod"


def signed(stub: ScoreStub) -> SignedScoreStub:
    return SignedScoreStub(
        stub.name, stub.scores, status=stub.status, normalize=stub.normalize, raises=stub.raises
    )


@pytest.mark.parametrize(
    "signing", [pytest.param(False, id="unsigned"), pytest.param(True, id="signed")]
)
@pytest.mark.parametrize("case", SCORE_CASES)
def test_score(case: ScoreCase, signing: bool) -> None:
    """Signed or not, fresh or reused (the second cycle), the same scores or
    error: the rows path of all-signing plugins equals the per-plugin one."""
    plugins = [signed(plugin) for plugin in case.plugins] if signing else case.plugins
    framework = make_framework(score=plugins, weights=case.weights)
    for _cycle in range(2):
        state = CycleState()
        state.skip_score_plugins.update(case.skip)

        scores, status = framework.run_score(state, POD, NODES)

        if case.error:
            assert status is not None
            assert (status.code, status.message()) == (Code.ERROR, case.error)
            assert len(scores) == 0
            continue
        assert status is None
        assert {s.name: s.total for s in scores} == case.totals
        assert {s.name: {w.plugin: w.score for w in s.scores} for s in scores} == case.weighted
        assert [s.name for s in scores.best(2)] == [
            name for name, _ in sorted(case.totals.items(), key=lambda item: -item[1])
        ]


def test_skipped_score_plugin_is_never_called() -> None:
    log: list[str] = []
    state = CycleState()
    state.skip_score_plugins.add("B")
    framework = make_framework(score=[ScoreStub("A", log=log), ScoreStub("B", log=log)])
    framework.run_score(state, POD, NODES)
    assert log == ["Score:A@n1", "Score:A@n2"]
