"""SchedulingThroughput as scheduler_perf computes it (pure; time passed in).

A sampler is told, once per tick, how many measured pods are bound so far.

Rules (scheduler_perf's throughput collector):
- ticks that see no bound pod at all are ignored;
- the first tick that sees some is only a baseline, never a sample: sampling
  and pod creation start independently, so that interval is an outlier;
- a tick that sees no progress records nothing yet; the next tick with
  progress records ``new pods / elapsed time`` once for every interval merged,
  using the real timestamps rather than the nominal interval;
- the interval cut short by the end of the run is not recorded.

The summary is the mean and the percentiles ``sorted[ceil(n * p / 100) - 1]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

PERCENTILES = (50, 90, 95, 99)


class ThroughputSampler:
    """Turns (time, bound count) observations into pods/s samples."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._last_time: float | None = None
        self._last_count = 0
        self._merged = 0

    def observe(self, now: float, bound: int) -> None:
        if bound == 0:
            return
        if self._last_time is None:
            self._last_time, self._last_count = now, bound
            return
        progress = bound - self._last_count
        if progress <= 0:
            self._merged += 1
            return
        rate = progress / (now - self._last_time)
        self.samples.extend([rate] * (self._merged + 1))
        self._last_time, self._last_count, self._merged = now, bound, 0


@dataclass(frozen=True)
class ThroughputStats:
    """Average and percentiles of the samples, in pods/s."""

    average: float
    p50: float
    p90: float
    p95: float
    p99: float
    samples: tuple[float, ...]


def percentile(ordered: Sequence[float], percent: int) -> float:
    """scheduler_perf's nearest-rank percentile of already sorted samples."""
    return ordered[max(math.ceil(len(ordered) * percent / 100) - 1, 0)]


def summarize(samples: Sequence[float]) -> ThroughputStats | None:
    """None when there is no sample (a run too short for even one interval)."""
    if not samples:
        return None
    ordered = sorted(samples)
    p50, p90, p95, p99 = (percentile(ordered, p) for p in PERCENTILES)
    return ThroughputStats(
        average=sum(samples) / len(samples),
        p50=p50,
        p90=p90,
        p95=p95,
        p99=p99,
        samples=tuple(samples),
    )
