"""The adaptive bind limit (``scheduler.cycle.concurrency``), driven by a
closed loop of binding cycles: a new cycle starts whenever fewer than the
limit are writing (the scheduling loop never runs dry), and each writes for
the latency its load gives at the concurrency it started with. Simulated
time (a heap of finish times), no clock, no sleep."""

from __future__ import annotations

import dataclasses
import heapq
import random
from collections.abc import Callable

import pytest

from scheduler.cycle.concurrency import (
    ADAPTIVE_CEILING,
    FLOOR_LIMIT,
    START_LIMIT,
    BindConcurrency,
    ConcurrencyLimit,
)

Latency = Callable[[int], float]  # seconds of one write, by cycles writing at its start
CEILING = ADAPTIVE_CEILING
ROUND = CEILING  # samples in which every cycle writing at the ceiling reports once


def flat(seconds: float) -> Latency:
    """The API server has headroom: more concurrency, the same latency."""
    return lambda writing: seconds


def proportional(seconds_per_cycle: float) -> Latency:
    """The API server is saturated: more concurrency only queues (pods/s fixed)."""
    return lambda writing: seconds_per_cycle * writing


def knee(seconds: float, seconds_per_cycle: float) -> Latency:
    """A fixed cost plus queueing (SchedulingBasic at 5000 nodes, roughly:
    25 ms at 16, 44 ms at 64)."""
    return lambda writing: seconds + seconds_per_cycle * writing


@dataclasses.dataclass
class Spread:
    """Each write a log-normal draw around the load's latency; the draws
    restart with every run (``fresh``)."""

    latency: Latency
    sigma: float
    seed: int = 1
    draws: random.Random = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.fresh()

    def fresh(self) -> None:
        self.draws = random.Random(self.seed)

    def __call__(self, writing: int) -> float:
        return self.latency(writing) * self.draws.lognormvariate(0.0, self.sigma)


def spread(latency: Latency, sigma: float, seed: int = 1) -> Latency:
    return Spread(latency, sigma, seed)


@dataclasses.dataclass(frozen=True)
class Load:
    """Phases of the closed loop: so many samples under one latency each."""

    phases: tuple[tuple[int, Latency], ...] = ()

    def then(self, samples: int, latency: Latency) -> Load:
        return Load((*self.phases, (samples, latency)))


def load(samples: int, latency: Latency) -> Load:
    return Load().then(samples, latency)


def run(limit: ConcurrencyLimit, workload: Load) -> list[int]:
    """The limit after each sample, in the order the cycles finish."""
    now, order, writing = 0.0, 0, 0
    finishing: list[tuple[float, int, float, int]] = []  # at, order, seconds, writing
    trace: list[int] = []
    for samples, latency in workload.phases:
        if isinstance(latency, Spread):
            latency.fresh()
        for _ in range(samples):
            while writing < limit.limit:
                writing += 1
                seconds = latency(writing)
                heapq.heappush(finishing, (now + seconds, order, seconds, writing))
                order += 1
            now, _, seconds, started_with = heapq.heappop(finishing)
            trace.append(limit.observe(seconds, started_with))
            writing -= 1
    return trace


def adaptive(ceiling: int = CEILING) -> ConcurrencyLimit:
    limiter = BindConcurrency(ceiling, adaptive=True).limiter()
    assert limiter is not None
    return limiter


def pinned(ceiling: int = CEILING) -> ConcurrencyLimit:
    limiter = BindConcurrency(ceiling, adaptive=False).limiter()
    assert limiter is not None
    return limiter


def up_to(ceiling: int) -> Callable[[], ConcurrencyLimit]:
    return lambda: adaptive(ceiling)


@pytest.mark.parametrize(
    ("make", "workload", "first", "settled"),
    [
        pytest.param(
            adaptive,
            load(3000, flat(0.025)),
            START_LIMIT,
            (CEILING, CEILING),
            id="flat latency: rises from 16 to the ceiling and stays",
        ),
        pytest.param(
            adaptive,
            load(6000, spread(flat(0.025), 0.5)),
            START_LIMIT,
            (CEILING - 4, CEILING),
            id="flat latency with a wide spread: stays near the ceiling",
        ),
        pytest.param(
            adaptive,
            load(6000, proportional(0.0015)),
            START_LIMIT,
            (FLOOR_LIMIT, CEILING // 2),
            id="latency proportional to concurrency: settles well below the ceiling",
        ),
        pytest.param(
            adaptive,
            load(6000, spread(proportional(0.0015), 0.3)),
            START_LIMIT,
            (FLOOR_LIMIT, CEILING // 2),
            id="proportional latency with a spread: settles well below the ceiling",
        ),
        pytest.param(
            adaptive,
            load(6000, knee(0.0187, 0.0004)),
            START_LIMIT,
            (CEILING // 2, CEILING - 8),
            id="fixed cost plus queueing: settles below the ceiling",
        ),
        pytest.param(
            adaptive,
            load(3000, flat(0.0)),
            START_LIMIT,
            (CEILING, CEILING),
            id="zero durations (a fake clock) read as flat latency",
        ),
        pytest.param(
            up_to(8),
            load(3000, flat(0.025)),
            8,
            (8, 8),
            id="a ceiling below 16: starts and stays at the ceiling",
        ),
        pytest.param(
            up_to(2),
            load(3000, proportional(0.0015)),
            2,
            (2, 2),
            id="a ceiling below the floor: the floor is the ceiling",
        ),
        pytest.param(
            pinned,
            load(3000, proportional(0.0015)),
            CEILING,
            (CEILING, CEILING),
            id="pinned: queueing does not move it",
        ),
        pytest.param(
            pinned,
            load(3000, spread(flat(0.025), 0.5)),
            CEILING,
            (CEILING, CEILING),
            id="pinned: flat latency does not move it",
        ),
    ],
)
def test_the_limit_follows_the_latency(
    make: Callable[[], ConcurrencyLimit], workload: Load, first: int, settled: tuple[int, int]
) -> None:
    limiter = make()
    assert limiter.limit == first

    trace = run(limiter, workload)

    assert all(limiter.floor <= value <= limiter.ceiling for value in trace)
    later = trace[len(trace) // 2 :]
    assert settled[0] <= min(later)
    assert max(later) <= settled[1]


def test_a_sudden_latency_jump_cuts_the_limit_within_a_few_rounds() -> None:
    limiter = adaptive()
    before = run(limiter, load(3000, flat(0.025)))
    assert before[-1] == CEILING

    after = run(limiter, load(3 * ROUND, flat(0.25)))

    assert min(after) <= CEILING // 2
    assert after.index(min(after)) < 3 * ROUND


def test_the_limit_climbs_back_once_the_slower_latency_holds() -> None:
    """Ten times slower for good: the floor relearns the no-load latency."""
    limiter = adaptive()
    run(limiter, load(3000, flat(0.025)))

    after = run(limiter, load(3000, flat(0.25)))

    assert min(after) == FLOOR_LIMIT
    assert after[-1] == CEILING


@pytest.mark.parametrize(
    ("seconds", "writing", "expected"),
    [
        pytest.param(0.025, START_LIMIT, START_LIMIT, id="a usual sample: no cut"),
        pytest.param(1.0, START_LIMIT, START_LIMIT, id="one slow cycle (a PreBind): no cut"),
        pytest.param(0.025, 1, START_LIMIT, id="demand far below the limit: no rise"),
    ],
)
def test_one_sample_after_a_steady_latency(seconds: float, writing: int, expected: int) -> None:
    limiter = ConcurrencyLimit(CEILING)
    for _ in range(100):
        limiter.observe(0.025, 1)  # the baseline, without raising the limit
    assert limiter.limit == START_LIMIT

    assert limiter.observe(seconds, writing) == expected


def test_unbounded_has_no_limiter() -> None:
    assert BindConcurrency(0).limiter() is None
