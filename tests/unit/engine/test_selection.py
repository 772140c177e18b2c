"""How many feasible nodes to look for, and the random choice among the best."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from scheduler.cycle.selection import num_feasible_nodes_to_find, select_host
from scheduler.framework.types import ScoreTable


@pytest.mark.parametrize(
    ("nodes", "percentage", "expected"),
    [
        pytest.param(0, None, 0, id="no node"),
        pytest.param(50, None, 50, id="small cluster: all nodes"),
        pytest.param(99, 10, 99, id="small cluster ignores the percentage"),
        pytest.param(100, None, 100, id="100 nodes: 50% is below the floor of 100"),
        pytest.param(200, None, 100, id="200 nodes: 49% is below the floor"),
        pytest.param(1000, None, 420, id="1000 nodes: adaptive 42%"),
        pytest.param(5000, None, 500, id="5000 nodes: adaptive 10%"),
        pytest.param(6000, None, 300, id="6000 nodes: adaptive floor of 5%"),
        pytest.param(10000, None, 500, id="10000 nodes: 5%"),
        pytest.param(1000, 0, 420, id="0 means adaptive"),
        pytest.param(1000, 50, 500, id="explicit percentage"),
        pytest.param(1000, 5, 100, id="explicit percentage below the floor"),
        pytest.param(300, 100, 300, id="100% is every node"),
    ],
)
def test_num_feasible_nodes_to_find(nodes: int, percentage: int | None, expected: int) -> None:
    assert num_feasible_nodes_to_find(nodes, percentage) == expected


def table(totals: dict[str, int]) -> ScoreTable:
    return ScoreTable(list(totals), (), (), list(totals.values()))


def test_the_single_best_node_wins() -> None:
    assert select_host(table({"a": 10, "b": 90, "c": 50}), random.Random(0)) == "b"


def test_ties_are_broken_uniformly_at_random() -> None:
    scores = table({"a": 90, "b": 10, "c": 90, "d": 90})
    rng = random.Random(42)
    picks = Counter(select_host(scores, rng) for _ in range(3000))
    assert set(picks) == {"a", "c", "d"}
    assert all(800 < count < 1200 for count in picks.values()), picks


def test_the_same_seed_picks_the_same_nodes() -> None:
    scores = table({"a": 1, "b": 1, "c": 1})
    first = [select_host(scores, random.Random(7)) for _ in range(5)]
    second = [select_host(scores, random.Random(7)) for _ in range(5)]
    assert first == second
