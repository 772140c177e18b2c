"""DefaultPreemption's choice of node: how many candidates the dry run looks
for, the dry run itself, and upstream's ``pickOneNodeForPreemption`` order."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from plugins.default_preemption.candidates import (
    Candidate,
    CheckNode,
    dry_run,
    num_candidates,
    pick_one_node_for_preemption,
)
from scheduler.framework import Pod, Status
from tests.support.builders import make_pod
from tests.unit.plugins.support import pod


def victim(name: str, priority: int, start: str = "") -> Pod:
    builder = make_pod(name).node("n").priority(priority)
    return pod((builder.start_time(start) if start else builder).obj())


def candidate(node: str, *victims: Pod, violations: int = 0) -> Candidate:
    return Candidate(node, tuple(victims), violations)


@pytest.mark.parametrize(
    ("nodes", "percentage", "absolute", "expected"),
    [
        pytest.param(50, 10, 100, 50, id="small cluster: every node"),
        pytest.param(5000, 10, 100, 500, id="10% of a large cluster"),
        pytest.param(500, 10, 100, 100, id="at least the absolute minimum"),
        pytest.param(999, 10, 0, 99, id="integer division"),
        pytest.param(3, 0, 1, 1, id="absolute only"),
    ],
)
def test_num_candidates(nodes: int, percentage: int, absolute: int, expected: int) -> None:
    assert num_candidates(nodes, percentage, absolute) == expected


@pytest.mark.parametrize(
    ("candidates", "chosen"),
    [
        pytest.param(
            [candidate("a", victim("x", 1), violations=1), candidate("b", victim("y", 50))],
            "b",
            id="fewest PDB violations first",
        ),
        pytest.param(
            [candidate("a", victim("x", 20)), candidate("b", victim("y", 10), victim("z", 10))],
            "b",
            id="then the lowest highest-priority victim",
        ),
        pytest.param(
            [
                candidate("a", victim("x", 10), victim("y", 5)),
                candidate("b", victim("z", 10), victim("w", 1)),
            ],
            "b",
            id="then the smallest sum of priorities",
        ),
        pytest.param(
            [
                candidate("a", victim("x", -5), victim("y", -5)),
                candidate("b", victim("z", -5)),
            ],
            "b",
            id="negative priorities: fewer victims still sum smaller (MaxInt32 + 1 offset)",
        ),
        pytest.param(
            [
                candidate("a", victim("x", 10, "2024-01-01T00:00:00Z")),
                candidate("b", victim("y", 10, "2024-06-01T00:00:00Z")),
            ],
            "b",
            id="then the latest start among the highest-priority victims",
        ),
        pytest.param(
            [candidate("a", victim("x", 10)), candidate("b", victim("y", 10))],
            "a",
            id="then the first",
        ),
    ],
)
def test_pick_one_node_for_preemption(candidates: list[Candidate], chosen: str) -> None:
    picked = pick_one_node_for_preemption(candidates)
    assert picked is not None
    assert picked.node_name == chosen


def test_pick_one_of_none_is_none() -> None:
    assert pick_one_node_for_preemption([]) is None


def outcomes(
    table: dict[str, tuple[Sequence[Pod], int, Status | None]], seen: list[str]
) -> CheckNode:
    def check(name: str) -> tuple[Sequence[Pod], int, Status | None]:
        seen.append(name)
        return table[name]

    return check


def test_dry_run_starts_at_the_offset_and_stops_when_enough_were_found() -> None:
    seen: list[str] = []
    x = victim("x", 1)
    table: dict[str, tuple[Sequence[Pod], int, Status | None]] = {
        "n0": ([x], 0, None),
        "n1": ([], 0, Status.unresolvable("No preemption victims found for incoming pod")),
        "n2": ([x], 1, None),
        "n3": ([x], 0, None),
    }
    found, statuses = dry_run(["n0", "n1", "n2", "n3"], 1, 2, outcomes(table, seen))
    assert seen == ["n1", "n2", "n3"]
    assert [c.node_name for c in found] == ["n3", "n2"], "PDB-clean candidates first"
    assert list(statuses) == ["n1"]


def test_dry_run_keeps_going_until_a_clean_candidate() -> None:
    seen: list[str] = []
    x = victim("x", 1)
    table: dict[str, tuple[Sequence[Pod], int, Status | None]] = {
        "n0": ([x], 1, None),
        "n1": ([x], 1, None),
        "n2": ([x], 0, None),
    }
    found, _ = dry_run(["n0", "n1", "n2"], 0, 1, outcomes(table, seen))
    assert seen == ["n0", "n1", "n2"]
    assert [(c.node_name, c.num_pdb_violations) for c in found] == [("n2", 0), ("n0", 1)]


def test_dry_run_success_without_victims_is_an_error() -> None:
    found, statuses = dry_run(["n0"], 0, 1, lambda name: ([], 0, None))
    assert found == []
    assert statuses["n0"].is_error()
    assert statuses["n0"].message() == 'expected at least one victim pod on node "n0"'
