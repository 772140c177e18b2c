"""How many binding cycles may write at once: a limit that follows the bind
latency. Pure and synchronous; the caller measures durations with its Clock.

``ConcurrencyLimit.observe(seconds, writing)`` takes one sample: how long a
bound cycle counted as writing (``seconds``), and how many cycles were
writing, itself included, when it last started to count (``writing``). The
limit is an integer in ``[floor, ceiling]``.

The algorithm is a latency gradient against a no-load baseline (Gradient2's
gradient, smoothing and queue allowance, with a Vegas-like baseline instead
of Gradient2's long-window average):

- ``short`` and ``long``: exponential averages of the samples (weights
  ``SHORT_WEIGHT`` and ``LONG_WEIGHT``, about the last 60 and 500; the mean
  of all samples until there are that many). A sample counts at most
  ``MAX_STEP`` times ``short``, so one slow cycle (a PreBind of up to its
  grace) moves it little, while a lasting jump passes within a few dozen
  samples as the average compounds. Nothing changes in the first
  ``WARM_UP`` samples.
- ``baseline``: the lowest ``long`` seen, the latency without queueing (the
  long average, not the short, so that the spread of single writes does not
  drag it below the typical latency). At the floor the baseline and the
  long average restart from ``short``, rising or not: there the
  concurrency cannot fall further, so the latency the floor sees is the
  no-load latency now (the API server got slower for good), and the limit
  climbs back from the floor at once.
- ``gradient = clamp(TOLERANCE * baseline / short, MIN_GRADIENT, 1)``. Below
  1 (the latency grew by more than the tolerance), the limit moves a step
  (``CUT_WEIGHT``) toward ``writing * gradient``: relative to the
  concurrency the sample saw, not to the limit now, so the cycles started
  before a cut report the same target again instead of cutting it twice,
  and the steps average the spread of the samples. At 1 the limit grows by
  ``1 / sqrt(limit)`` per sample (``sqrt(limit)`` per round of ``limit``
  samples, Gradient's queue allowance), but only when the sample was taken
  near the limit (``writing >= limit / 2``): a limit the demand does not
  reach says nothing about the API server.

Why not Gradient2 as is: its long average catches up with any latency that
lasts, so under a saturated API server (latency proportional to
concurrency) the gradient returns to 1 and the limit ratchets up to the
ceiling, adding only queueing (the 5000-node bench: attempt p50 44 ms at 64
vs 25 ms at 16, the same pods/s). Against a baseline that does not follow
the load, the limit settles where the latency is ``TOLERANCE`` times the
baseline. In the closed-loop model of the tests: a flat latency (also with a
+-50 % log-normal spread) keeps the gradient at 1, the limit climbs from 16
to 64 in about 330 samples and stays (no oscillation); a latency
proportional to concurrency settles it between 15 and 26; 18.7 ms + 0.4 ms
per cycle (the 5000-node numbers above, read as a line) between 40 and 50;
a tenfold jump at 64 brings it to 32 within about 20 samples and to the
floor within about 120, from where it climbs back to 64 (the latency is
flat again, only slower) within about 330 more. Why not AIMD:
its fixed cut (x0.9 per round) needs many rounds to fall from 64 to where
the latency says it should be. The costs: a baseline learnt in a quiet
moment that never returns sends the limit to the floor once, to relearn it
there; and ``TOLERANCE`` trades noise for queueing (1.25 would stop nearer
the knee but reads a wide spread as queueing).

Invariants: ``floor <= limit <= ceiling``; a pinned limit (``adaptive``
False) is the ceiling and never moves; ``observe`` reads no clock.
"""

from __future__ import annotations

import dataclasses
import math

# --max-concurrent-binds by default, pinned (--adaptive-concurrent-binds off).
# Measured at 9bd80d3, backlog, this machine: pinned 16 vs adaptive up to 64,
# 5000 nodes 620 vs 653 pods/s, attempt p50 18.9 vs 29.4 ms, p99 61 vs 112 ms;
# 500 nodes 706 vs 698 pods/s, p50 16.9 vs 28.9 ms. Once the per-pod writes
# got cheaper (the write lane) the API server is the limit at 16 already, and
# the adaptive limit, settling at 40-50, only adds queueing. Kept as an
# option for API servers with more headroom than their latency shows.
DEFAULT_MAX_CONCURRENT_BINDS = 16
# The ceiling to give the adaptive limit room to move (its tests' range).
ADAPTIVE_CEILING = 64
# Where the adaptive limit starts: the old fixed default (SchedulingBasic at
# 5000 nodes: p50 25 ms at 16 vs 44 ms at 64, the same pods/s).
START_LIMIT = 16
# The least it falls to: a few writes in flight hide one request's round trip.
FLOOR_LIMIT = 4

SHORT_WEIGHT = 1 / 32  # the recent latency: about the last 60 samples
LONG_WEIGHT = 1 / 256  # the baseline's average: about the last 500 samples
WARM_UP = 32  # samples before the first change
MAX_STEP = 2.0  # one sample counts at most this many times the recent latency
TOLERANCE = 1.5  # the latency may grow by half over the baseline before the cut
MIN_GRADIENT = 0.5  # a cut at most halves the limit
CUT_WEIGHT = 0.1  # each sample moves the limit this far toward its target
MIN_SECONDS = 1e-6  # a zero duration (a fake clock) counts as this


@dataclasses.dataclass(frozen=True, slots=True)
class BindConcurrency:
    """What ``--max-concurrent-binds`` and ``--adaptive-concurrent-binds`` say."""

    ceiling: int = DEFAULT_MAX_CONCURRENT_BINDS  # 0: unbounded (no limit at all)
    adaptive: bool = False  # False: the limit is pinned at the ceiling

    def limiter(self) -> ConcurrencyLimit | None:
        """The limit to hold the loop to; None when unbounded."""
        if self.ceiling <= 0:
            return None
        return ConcurrencyLimit(self.ceiling, adaptive=self.adaptive)


DEFAULT_BINDS = BindConcurrency()  # the flags' defaults: pinned at 16


class ConcurrencyLimit:
    """The current limit of cycles writing at once, fed one sample per
    bound cycle (see the module docstring)."""

    __slots__ = (
        "_adaptive",
        "_baseline",
        "_ceiling",
        "_floor",
        "_limit",
        "_long",
        "_samples",
        "_short",
    )

    def __init__(
        self,
        ceiling: int,
        *,
        adaptive: bool = True,
        floor: int = FLOOR_LIMIT,
        start: int = START_LIMIT,
    ) -> None:
        if ceiling < 1:
            raise ValueError(f"ceiling must be 1 or more, not {ceiling}")
        self._ceiling = ceiling
        self._floor = max(1, min(floor, ceiling))
        self._adaptive = adaptive
        self._limit = float(min(max(start, self._floor), ceiling) if adaptive else ceiling)
        self._samples = 0
        self._short = 0.0
        self._long = 0.0
        self._baseline = math.inf

    @property
    def limit(self) -> int:
        return int(self._limit)

    @property
    def floor(self) -> int:
        return self._floor

    @property
    def ceiling(self) -> int:
        return self._ceiling

    def observe(self, seconds: float, writing: int) -> int:
        """One bound cycle wrote for ``seconds`` with ``writing`` cycles
        writing (itself included); returns the limit now."""
        if not self._adaptive:
            return self.limit
        sample = max(seconds, MIN_SECONDS)
        self._samples += 1
        if self._samples > 1:
            sample = min(sample, self._short * MAX_STEP)
        # The mean of all samples until there are enough for the window.
        self._short += (sample - self._short) * max(SHORT_WEIGHT, 1 / self._samples)
        self._long += (sample - self._long) * max(LONG_WEIGHT, 1 / self._samples)
        if self._samples < WARM_UP:
            return self.limit
        if self.limit <= self._floor:
            # At the floor the latency is not queueing of ours: the new no-load.
            self._baseline = self._long = self._short
        elif self._long < self._baseline:
            self._baseline = self._long
        gradient = min(1.0, max(MIN_GRADIENT, TOLERANCE * self._baseline / self._short))
        if gradient < 1.0:
            # Relative to the concurrency the sample saw, not to the limit now:
            # the cycles started before a cut report the same target again
            # instead of cutting it twice.
            target = writing * gradient
            if target < self._limit:
                self._limit += (target - self._limit) * CUT_WEIGHT
        elif writing * 2 >= self._limit:
            self._limit += 1.0 / math.sqrt(self._limit)
        self._limit = min(float(self._ceiling), max(float(self._floor), self._limit))
        return self.limit
