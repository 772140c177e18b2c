"""``FirstFits``: single-device picks kept across cycles give exactly what a
fresh scan gives. A table of named situations (what is reused, what is
scanned again, what is never kept), then a property: over random nodes,
devices, request shapes and sequences of devices taken and freed, the
allocator with the memo answers every node as the allocator without it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plugins.dynamicresources.allocator import (
    AllocatedState,
    AllocationError,
    Allocator,
    NodeAllocationError,
)
from plugins.dynamicresources.firstfit import FirstFits
from plugins.dynamicresources.model import DeviceID, parse_claim, parse_class, parse_slice
from plugins.dynamicresources.pools import PoolCache
from tests.support.drabuilders import (
    DeviceBuilder,
    Obj,
    make_claim,
    make_class,
    make_device,
    make_slice,
)
from tests.unit.plugins.dynamicresources.fakes import steady_cel

CEL = steady_cel()
LABELS = {"n1": {"zone": "a"}, "n2": {"zone": "b"}}
FAST = 'device.attributes["driver-a"].speed == "fast"'
CLASSES = {
    "any": make_class("any").driver("driver-a").obj(),
    "fast": make_class("fast")
    .driver("driver-a")
    .selector('device.attributes["driver-a"].speed == "fast"')
    .obj(),
}


def dev(name: str, speed: str = "fast") -> DeviceBuilder:
    return make_device(name).attr("speed", speed)


class World:
    """What the plugin keeps across cycles (pool cache, memo) and what a
    cycle is built from (slices, devices in use)."""

    def __init__(self, slices: list[Obj], memo: bool = True) -> None:
        self.slices = [parse_slice(s) for s in slices]
        self.pools = PoolCache()
        self.memo = FirstFits() if memo else None
        self.in_use: set[DeviceID] = set()

    def cycle(self) -> Allocator:
        return Allocator(
            AllocatedState(devices=frozenset(self.in_use)),
            {name: parse_class(raw) for name, raw in CLASSES.items()},
            self.slices,
            CEL,
            new_share_id=lambda: "share",
            pool_cache=self.pools,
            first_fits=self.memo,
        )

    def replace_slices(self, slices: list[Obj]) -> None:
        self.slices = [parse_slice(s) for s in slices]
        self.pools.invalidate()


def claim(device_class: str = "any", **options: Any) -> Obj:
    return make_claim("c").request("r", device_class, **options).obj()


def pick(world: World, node: str, raw_claim: Obj | None = None) -> str | None:
    """The device the allocator picks on ``node`` (None: no fit)."""
    results = world.cycle().allocate(node, LABELS[node], [parse_claim(raw_claim or claim())])
    if results is None:
        return None
    return str(results[0]["devices"]["results"][0]["device"])


def did(name: str) -> DeviceID:
    return ("driver-a", "pool-n1", name)


def n1_slice(*devices: DeviceBuilder | str) -> Obj:
    return make_slice("s1").driver("driver-a").pool("pool-n1").node("n1").device(*devices).obj()


@dataclass(frozen=True)
class Step:
    take: tuple[str, ...] = ()
    free: tuple[str, ...] = ()
    expect: str | None = None
    hit: bool = False  # answered from the memo


@dataclass(frozen=True)
class Case:
    name: str
    devices: tuple[DeviceBuilder | str, ...]
    steps: tuple[Step, ...]
    raw_claim: Obj = field(default_factory=claim)


CASES = [
    Case(
        "unchanged: the kept pick is reused",
        ("d1", "d2"),
        (Step(expect="d1"), Step(expect="d1", hit=True), Step(expect="d1", hit=True)),
    ),
    Case(
        "the picked device taken: the next one",
        ("d1", "d2", "d3"),
        (Step(expect="d1"), Step(take=("d1",), expect="d2"), Step(expect="d2", hit=True)),
    ),
    Case(
        "an earlier device freed: it wins again",
        ("d1", "d2"),
        (Step(take=("d1",), expect="d2"), Step(free=("d1",), expect="d1")),
    ),
    Case(
        "no device fits, kept as such, until one is freed",
        (dev("d1", "slow"), dev("d2")),
        (
            Step(take=("d2",), expect=None),
            Step(expect=None, hit=True),
            Step(free=("d2",), expect="d2"),
        ),
        claim("fast"),
    ),
    Case(
        "selectors: the first fast device, kept",
        (dev("d1", "slow"), dev("d2"), dev("d3")),
        (Step(expect="d2"), Step(expect="d2", hit=True), Step(take=("d2",), expect="d3")),
        claim("fast"),
    ),
    Case(
        "a node with a tainted device is never kept",
        (make_device("d1").taint("k", "NoSchedule"), "d2"),
        (Step(expect="d2"), Step(expect="d2", hit=False)),
    ),
    Case(
        "a node with a shared device is never kept",
        (make_device("d1").multiple(), "d2"),
        (Step(expect="d1"), Step(expect="d1", hit=False)),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_kept_picks_follow_the_devices_in_use(case: Case) -> None:
    world = World([n1_slice(*case.devices)])
    assert world.memo is not None
    for number, step in enumerate(case.steps):
        world.in_use |= {did(name) for name in step.take}
        world.in_use -= {did(name) for name in step.free}
        hits = world.memo.hits
        assert pick(world, "n1", case.raw_claim) == step.expect, f"step {number}"
        assert (world.memo.hits > hits) is step.hit, f"step {number}: hit"


def test_changed_slices_are_scanned_again() -> None:
    world = World([n1_slice("d1", "d2")])
    assert pick(world, "n1") == "d1"
    world.replace_slices([n1_slice("d0", "d1")])
    assert pick(world, "n1") == "d0"


def test_a_request_asking_for_capacity_is_never_kept() -> None:
    world = World([n1_slice(make_device("d1").capacity("mem", "10Gi"))])
    assert world.memo is not None
    asking = claim(capacity={"mem": "1Gi"})
    assert pick(world, "n1", asking) == "d1"
    assert pick(world, "n1", asking) == "d1"
    assert len(world.memo) == 0


# ---------------------------------------------------------------- property
SPEEDS = st.sampled_from(["fast", "slow"])
DEVICE = st.tuples(
    SPEEDS,
    st.sampled_from(["plain", "plain", "plain", "tainted", "shared"]),
)
NODE_DEVICES = st.lists(DEVICE, min_size=0, max_size=5)
# each step: devices of (node, index) to flip in or out of use
STEPS = st.lists(st.lists(st.tuples(st.sampled_from(["n1", "n2"]), st.integers(0, 4))), max_size=6)


def _device(name: str, speed: str, kind: str) -> DeviceBuilder:
    builder = dev(name, speed)
    if kind == "tainted":
        builder = builder.taint("k", "NoSchedule")
    elif kind == "shared":
        builder = builder.multiple()
    return builder


def _slices(layout: dict[str, Sequence[tuple[str, str]]]) -> list[Obj]:
    return [
        make_slice(f"s-{node}")
        .driver("driver-a")
        .pool(f"pool-{node}")
        .node(node)
        .device(*(_device(f"d{i}", speed, kind) for i, (speed, kind) in enumerate(devices)))
        .obj()
        for node, devices in layout.items()
    ]


def _answer(world: World, node: str, raw: Obj) -> Any:
    try:
        return world.cycle().allocate(node, LABELS[node], [parse_claim(raw)])
    except (AllocationError, NodeAllocationError) as error:
        return type(error).__name__


@settings(max_examples=200, deadline=None)
@given(
    n1=NODE_DEVICES,
    n2=NODE_DEVICES,
    steps=STEPS,
    device_class=st.sampled_from(["any", "fast"]),
)
def test_the_memo_answers_every_node_as_a_fresh_scan(
    n1: list[tuple[str, str]],
    n2: list[tuple[str, str]],
    steps: list[list[tuple[str, int]]],
    device_class: str,
) -> None:
    slices = _slices({"n1": n1, "n2": n2})
    kept, fresh = World(slices), World(slices, memo=False)
    raw = claim(device_class)
    for step in [[], *steps]:
        for node, index in step:
            device = ("driver-a", f"pool-{node}", f"d{index}")
            kept.in_use ^= {device}
            fresh.in_use ^= {device}
        for node in ("n1", "n2"):
            assert _answer(kept, node, raw) == _answer(fresh, node, raw)
