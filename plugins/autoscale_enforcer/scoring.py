"""Score curves for the AutoscaleEnforcer. Pure.

``target_fill`` (later upstream, the default): with x the node's reserved
fraction *after* placing the pod, y0 = ``minUsageScore``, y1 =
``maxUsageScore`` and xp = ``scorePeak``, each resource scores
``y0 + (1 - y0) * x / xp`` below the peak, ``y1 + (1 - y1) * (1 - x) / (1 - xp)``
above it and 1 at it; the node scores ``100 * s * min(f_cpu, f_mem)`` where
s = node total / largest node total (big nodes are preferred at equal fill).
A node the pod would put over budget scores 0.

``node_size`` (v0.1.13): ``min over resources of 100 * total // largest
total``; free room plays no part (bigger nodes always win).

``randomized`` (``randomize: true``): each non-zero score becomes a uniform
random integer in [1, score], spreading pods over similar nodes.
"""

from __future__ import annotations

import random

from plugins.autoscale_enforcer.config import Config, ScoreCurve
from plugins.autoscale_enforcer.state import Amounts
from scheduler.framework import MAX_NODE_SCORE


def _fill_score(x: float, config: Config) -> float:
    peak, low, high = config.score_peak, config.min_usage_score, config.max_usage_score
    if x == peak:
        return 1.0
    if x < peak:
        return low + (1 - low) * x / peak
    return high + (1 - high) * (1 - x) / (1 - peak)


def target_fill(after: Amounts, total: Amounts, largest: Amounts, config: Config) -> int:
    if total.has_zero() or largest.has_zero() or not after.fits_in(total):
        return 0
    size = min(total.cpu / largest.cpu, total.mem / largest.mem)
    fill = min(
        _fill_score(after.cpu / total.cpu, config), _fill_score(after.mem / total.mem, config)
    )
    return max(0, min(MAX_NODE_SCORE, int(MAX_NODE_SCORE * size * fill)))


def node_size(after: Amounts, total: Amounts, largest: Amounts) -> int:
    if total.has_zero() or largest.has_zero() or not after.fits_in(total):
        return 0
    return min(MAX_NODE_SCORE * total.cpu // largest.cpu, MAX_NODE_SCORE * total.mem // largest.mem)


def score(after: Amounts, total: Amounts, largest: Amounts, config: Config) -> int:
    if config.score_curve is ScoreCurve.NODE_SIZE:
        return node_size(after, total, largest)
    return target_fill(after, total, largest, config)


def randomized(values: list[int], rng: random.Random) -> list[int]:
    return [rng.randint(1, value) if value > 0 else 0 for value in values]
