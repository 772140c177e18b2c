"""Score curves for the AutoscaleEnforcer. Pure.

``target_fill`` (later upstream, the default), as Neon's ``Score`` (v0.41.0):
with x_r = 1 - remaining_r / total_r the node's fill of resource r *before*
the pod (its current reservations), y0 = ``minUsageScore``, y1 =
``maxUsageScore`` and xp = ``scorePeak``, f(x) = ``y0 + (1 - y0) / xp * x``
below the peak, ``y1 + (1 - y1) / (1 - xp) * (1 - x)`` above it and 1 at it;
each resource scores ``int(100 * f(x_r) * s_r)`` with s_r = total_r / the
largest node's total_r (so big nodes are preferred at equal fill, per
resource), and the node the lower of the two. A node the pod would put over
budget scores 0.

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
    if x < peak:
        return low + (1 - low) / peak * x
    if x > peak:
        return high + (1 - high) / (1 - peak) * (1 - x)
    return 1.0


def _resource_score(before: int, total: int, largest: int, config: Config) -> int:
    fraction = 1 - max(0, total - before) / total
    return int(MAX_NODE_SCORE * (_fill_score(fraction, config) * (total / largest)))


def target_fill(
    before: Amounts, after: Amounts, total: Amounts, largest: Amounts, config: Config
) -> int:
    if total.has_zero() or largest.has_zero() or not after.fits_in(total):
        return 0
    cpu = _resource_score(before.cpu, total.cpu, largest.cpu, config)
    mem = _resource_score(before.mem, total.mem, largest.mem, config)
    return max(0, min(MAX_NODE_SCORE, cpu, mem))


def node_size(after: Amounts, total: Amounts, largest: Amounts) -> int:
    if total.has_zero() or largest.has_zero() or not after.fits_in(total):
        return 0
    return min(MAX_NODE_SCORE * total.cpu // largest.cpu, MAX_NODE_SCORE * total.mem // largest.mem)


def score(before: Amounts, after: Amounts, total: Amounts, largest: Amounts, config: Config) -> int:
    """``before``: the node's reservations without the pod; ``after``: with it."""
    if config.score_curve is ScoreCurve.NODE_SIZE:
        return node_size(after, total, largest)
    return target_fill(before, after, total, largest, config)


def randomized(values: list[int], rng: random.Random) -> list[int]:
    return [rng.randint(1, value) if value > 0 else 0 for value in values]
