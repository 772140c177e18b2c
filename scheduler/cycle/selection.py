"""Pure helpers of node selection: how many feasible nodes to look for, and
which of the best-scored nodes to pick.

``num_feasible_nodes_to_find`` follows upstream exactly: small clusters (< 100
nodes) are searched fully; otherwise ``percentageOfNodesToScore`` (adaptive
``50 - n/125`` with a floor of 5 when 0) of the nodes, at least 100.
"""

from __future__ import annotations

import random

from scheduler.framework.types import ScoreTable

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def num_feasible_nodes_to_find(num_all_nodes: int, percentage: int | None) -> int:
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    adaptive = percentage or 0
    if adaptive == 0:
        adaptive = 50 - num_all_nodes // 125
        adaptive = max(adaptive, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    found = num_all_nodes * adaptive // 100
    return max(found, MIN_FEASIBLE_NODES_TO_FIND)


def select_host(scores: ScoreTable, rng: random.Random) -> str:
    """Uniformly random among the nodes with the highest total score."""
    totals = scores.totals
    best = max(totals)
    top = [index for index, total in enumerate(totals) if total == best]
    return scores.names[top[0] if len(top) == 1 else rng.choice(top)]
