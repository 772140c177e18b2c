"""The tie-break among equally good nodes draws from its own generator: for a
seed, placements are the same whatever the plugin-metrics sampling draws.
Each plugin gets its own generator from the Handle, derived from the same
seed, which no other draw moves."""

from __future__ import annotations

import random

import pytest
from prometheus_client import CollectorRegistry

from scheduler.cache.snapshot import Snapshot
from scheduler.config import parse_config
from scheduler.cycle.randomness import CycleRandomness, PluginRandomness
from scheduler.engine.assembly import build_registry, resolve
from scheduler.engine.core import Engine
from scheduler.engine.profilehandle import ProfileHandle
from scheduler.framework import (
    CycleState,
    ExtensionPoint,
    FilterPlugin,
    Handle,
    NodeInfo,
    PluginSpec,
    Pod,
    Status,
)
from scheduler.simulate.clock import SimClock
from scheduler.simulate.memory import MemoryCluster
from tests.support.handles import bare_profile_handle
from tests.support.objects import pod
from tests.unit.config.builders import make_config, make_profile
from tests.unit.engine.harness import harness
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


# ------------------------------------------------------------ plugins' own
def profile_handle(profile: str, randomness: PluginRandomness) -> ProfileHandle:
    return bare_profile_handle(profile, randomness=randomness)


def first_draws(generator: random.Random, count: int = 4) -> list[float]:
    return [generator.random() for _ in range(count)]


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        pytest.param(("p", "A"), ("p", "A"), True, id="same profile and plugin: same sequence"),
        pytest.param(("p", "A"), ("p", "B"), False, id="another plugin: another sequence"),
        pytest.param(("p", "A"), ("q", "A"), False, id="another profile: another sequence"),
        pytest.param(("p/q", "A"), ("p", "q/A"), False, id="names do not run together"),
    ],
)
def test_a_seed_gives_each_plugin_of_each_profile_its_own_sequence(
    first: tuple[str, str], second: tuple[str, str], same: bool
) -> None:
    plugins = CycleRandomness.split(random.Random(SEED)).plugins
    again = CycleRandomness.split(random.Random(SEED)).plugins
    assert plugins.seed is not None, "the seed reaches the plugins"
    assert plugins.seed == again.seed

    draws = first_draws(profile_handle(first[0], plugins).rng_for(first[1]))
    other = first_draws(profile_handle(second[0], again).rng_for(second[1]))

    assert (draws == other) is same


PURPOSES = ("Mine", "Other", "tie_break", "sampling")


def generators(randomness: CycleRandomness, handle: ProfileHandle) -> dict[str, random.Random]:
    """Every generator one seed fixes: two plugins' (``Mine``, ``Other``) and the loop's."""
    return {
        "Mine": handle.rng_for("Mine"),
        "Other": handle.rng_for("Other"),
        "tie_break": randomness.tie_break,
        "sampling": randomness.sampling,
    }


@pytest.mark.parametrize(
    "drawer",
    [
        pytest.param(None, id="nothing draws first"),
        pytest.param("Mine", id="a plugin's draws move its own sequence only"),
        pytest.param("Other", id="another plugin's draws move neither mine nor the loop's"),
        pytest.param("tie_break", id="the tie-break's draws move no plugin's"),
        pytest.param("sampling", id="sampling's draws move no plugin's"),
    ],
)
def test_a_draw_moves_only_its_own_sequence(drawer: str | None) -> None:
    """Each sequence replayed alone, then for the same seed after ``drawer``
    drew 50 numbers: only the drawer's own sequence has moved."""
    alone = CycleRandomness.split(random.Random(SEED))
    expected = {
        purpose: first_draws(generator)
        for purpose, generator in generators(alone, profile_handle("p", alone.plugins)).items()
    }
    randomness = CycleRandomness.split(random.Random(SEED))
    seeded = generators(randomness, profile_handle("p", randomness.plugins))

    if drawer is not None:
        first_draws(seeded[drawer], 50)
    got = {purpose: first_draws(generator) for purpose, generator in seeded.items()}

    assert {purpose for purpose in PURPOSES if got[purpose] != expected[purpose]} == (
        {drawer} if drawer is not None else set()
    )


def test_the_handle_gives_a_plugin_one_generator_not_a_restart() -> None:
    handle = profile_handle("p", PluginRandomness(SEED))
    generator = handle.rng_for("A")
    draws = first_draws(generator)

    assert handle.rng_for("A") is generator
    assert first_draws(handle.rng_for("A")) != draws, "later draws continue the sequence"


@pytest.mark.parametrize(
    ("seed", "same"),
    [
        pytest.param(SEED, True, id="seeded: two engines draw alike"),
        pytest.param(None, False, id="unseeded: two engines draw apart"),
    ],
)
async def test_the_engine_hands_each_plugin_a_generator_from_its_seed(
    seed: int | None, same: bool
) -> None:
    def draws() -> dict[tuple[str, str], list[float]]:
        built: list[Drawer] = []
        registry = build_registry().merged([DrawA.spec(built), DrawB.spec(built)])
        text = (
            make_config()
            .profiles(
                make_profile("p").enable(ExtensionPoint.FILTER, "DrawA", "DrawB"),
                make_profile("q").enable(ExtensionPoint.FILTER, "DrawA"),
            )
            .yaml()
        )
        config = parse_config(text)
        clock = SimClock(0.0)
        Engine(
            config,
            resolve(config, registry),
            registry,
            MemoryCluster([], clock.wall),
            clock=clock,
            hostname="test",
            metrics_registry=CollectorRegistry(),
            rng=None if seed is None else random.Random(seed),
        )
        return {(plugin.profile, plugin.name): first_draws(plugin.rng) for plugin in built}

    first, second = draws(), draws()

    assert set(first) == {("p", "DrawA"), ("p", "DrawB"), ("q", "DrawA")}
    assert (first == second) is same
    assert len({tuple(sequence) for sequence in first.values()}) == 3, "each its own"


class Drawer(FilterPlugin):
    """Keeps the generator its handle gives it, as the in-tree plugins do."""

    def __init__(self, handle: Handle) -> None:
        self.profile = handle.profile_name
        self.rng = handle.rng_for(self.name)

    @classmethod
    def spec(cls, built: list[Drawer]) -> PluginSpec:
        def new(args: object, handle: Handle) -> Drawer:
            built.append(cls(handle))
            return built[-1]

        return PluginSpec(name=cls.name, plugin_class=cls, factory=new)

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return None


class DrawA(Drawer):
    name = "DrawA"


class DrawB(Drawer):
    name = "DrawB"
