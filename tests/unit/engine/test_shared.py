"""What plugins share across profiles (``Handle.shared``): one object per key
for the whole engine, built once by the first profile that asks, and never
shared between two engines (two processes)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from scheduler.config import parse_config
from scheduler.engine.assembly import build_registry, resolve
from scheduler.engine.core import Engine
from scheduler.framework import (
    CycleState,
    ExtensionPoint,
    FilterPlugin,
    Handle,
    NodeInfo,
    PluginSpec,
    Pod,
    SharedKey,
    Status,
)
from scheduler.simulate.clock import SimClock
from scheduler.simulate.memory import MemoryCluster
from tests.unit.config.builders import make_config, make_profile


class Ledger:
    """Stands for process-wide plugin state (DynamicResources' claim tracker)."""

    def __init__(self, built_by: str) -> None:
        self.built_by = built_by


LEDGER: SharedKey[Ledger] = SharedKey("Sharer/ledger")


class Sharer(FilterPlugin):
    name = "Sharer"

    def __init__(self, handle: Handle) -> None:
        self.profile = handle.profile_name
        self.ledger = handle.shared(LEDGER, lambda: Ledger(handle.profile_name))

    @classmethod
    def spec(cls, built: list[Sharer]) -> PluginSpec:
        def new(args: object, handle: Handle) -> Sharer:
            built.append(cls(handle))
            return built[-1]

        return PluginSpec(name=cls.name, plugin_class=cls, factory=new)

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return None


def engine_plugins() -> list[Sharer]:
    built: list[Sharer] = []
    registry = build_registry().merged([Sharer.spec(built)])
    text = (
        make_config()
        .profiles(
            make_profile("p").enable(ExtensionPoint.FILTER, "Sharer"),
            make_profile("q").enable(ExtensionPoint.FILTER, "Sharer"),
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
    )
    return built


def test_every_profile_of_an_engine_gets_the_object_the_first_built() -> None:
    first, second = engine_plugins()
    assert (first.profile, second.profile) == ("p", "q")
    assert first.ledger is second.ledger
    assert first.ledger.built_by == "p"


def test_two_engines_share_nothing() -> None:
    (one, _), (other, _) = engine_plugins(), engine_plugins()
    assert one.ledger is not other.ledger
