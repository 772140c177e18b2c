"""The tie-break among equally good nodes draws from its own generator: for a
seed, placements are the same whatever the plugin-metrics sampling draws."""

from __future__ import annotations

import random

import pytest

from scheduler.cache.snapshot import Snapshot
from scheduler.cycle.randomness import CycleRandomness
from tests.unit.engine.harness import harness
from tests.unit.engine.objects import pod
from tests.unit.engine.plugins import (
    BindStub,
    FilterStub,
    RecordingFrameworkMetrics,
    ScoreStub,
    make_framework,
)

SEED = 7
NODES = tuple(f"n{i}" for i in range(1, 7))
PODS = [pod(f"p{i}") for i in range(12)]


class Fixed(random.Random):
    """A sampling generator that always draws ``value``."""

    def __init__(self, value: float) -> None:
        super().__init__(0)
        self.value = value

    def random(self) -> float:
        return self.value


def tie_breaks_alone(names: list[str]) -> list[str]:
    """What ``select_host`` picks for each pod if nothing else draws from the
    tie-break generator of SEED (all nodes tie, all are evaluated in order)."""
    replay = CycleRandomness.split(random.Random(SEED)).tie_break
    return [names[replay.choice(range(len(names)))] for _ in PODS]


@pytest.mark.parametrize(
    ("sampling", "sampled"),
    [
        pytest.param(Fixed(1.0), False, id="sampling never fires"),
        pytest.param(Fixed(0.0), True, id="sampling fires every cycle"),
        pytest.param(random.Random(SEED), True, id="sampling at its rate, same seed"),
    ],
)
async def test_placements_for_a_seed_do_not_depend_on_sampling(
    sampling: random.Random, sampled: bool
) -> None:
    binder = BindStub("B")
    metrics = RecordingFrameworkMetrics()
    framework = make_framework(
        filter=[FilterStub("F")], score=[ScoreStub("Tie")], bind=[binder], metrics=metrics
    )
    seeded = CycleRandomness.split(random.Random(SEED))
    h = harness(framework, nodes=NODES, randomness=CycleRandomness(seeded.tie_break, sampling))
    snapshot = Snapshot()
    h.cache.update_snapshot(snapshot)
    names = [info.name for info in snapshot.node_info_list]
    expected = tie_breaks_alone(names)
    assert len(set(expected)) > 2, "the seed spreads the pods: ties are really broken"

    for target in PODS:
        assert h.scheduler.schedule_one(h.queued(target))
        assert await h.scheduler.drain(5.0) == 0

    assert [node for _, node in binder.bound] == expected
    assert bool(metrics.plugins) is sampled, "the case samples as it says"


def test_split_is_deterministic_and_gives_each_purpose_its_own_sequence() -> None:
    first = CycleRandomness.split(random.Random(SEED))
    second = CycleRandomness.split(random.Random(SEED))
    draws = [first.tie_break.random(), first.sampling.random()]
    assert draws == [second.tie_break.random(), second.sampling.random()]
    assert draws[0] != draws[1]
