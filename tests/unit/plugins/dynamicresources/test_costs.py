"""What filtering one pod costs does not grow with the rest of the cluster
(issue 23 #8), measured as operation counts, never as time: the shared-
counter bookkeeping is per cycle, not per node and device; PreFilter's view
of the devices in use copies nothing of the index; the selector results kept
per device are bounded in number and size."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from plugins.dynamicresources import cel
from plugins.dynamicresources.allocator import AllocatedState, Allocator
from plugins.dynamicresources.cel import CelDevice
from plugins.dynamicresources.model import parse_claim, parse_class, parse_slice
from plugins.dynamicresources.state import ClaimTracker
from scheduler.framework import object_key
from tests.support.drabuilders import make_claim, make_class, make_device, make_slice
from tests.support.informers import FakeStore
from tests.unit.plugins.dynamicresources.fakes import steady_cel

CLASSES = {"class-a": parse_class(make_class("class-a").driver("driver-a").obj())}


class CountingSet(frozenset[Any]):
    """Counts the elements anyone iterates over."""

    iterated: int

    def __iter__(self) -> Iterator[Any]:
        for item in super().__iter__():
            self.iterated = getattr(self, "iterated", 0) + 1
            yield item


class CountingDict(dict[Any, Any]):
    iterated = 0

    def __iter__(self) -> Iterator[Any]:
        for key in super().__iter__():
            self.iterated += 1
            yield key


def partitioned_node(node: str) -> list[dict[str, Any]]:
    """A node-local pool whose four devices share one counter set."""
    devices = [make_device(f"device-{i}").consumes("counter-set-1", memory="4Gi") for i in range(4)]
    return [
        make_slice(f"{node}-devices").node(node).pool(node, 1, 2).device(*devices).obj(),
        make_slice(f"{node}-counters")
        .node(node)
        .pool(node, 1, 2)
        .counters("counter-set-1", memory="8Gi")
        .obj(),
    ]


def shared_elsewhere(count: int) -> CountingSet:
    """``count`` shared allocations of devices on no node filtered here."""
    return CountingSet((("driver-b", "far", f"nic-{i}"), f"share-{i}") for i in range(count))


def filter_one_pod(nodes: int, shared: CountingSet) -> int:
    slices = [parse_slice(s) for n in range(nodes) for s in partitioned_node(f"node-{n}")]
    allocator = Allocator(AllocatedState(shared=shared), CLASSES, slices, steady_cel())
    claims = [parse_claim(make_claim("claim-0").request("req-0", "class-a").obj())]
    for n in range(nodes):
        assert allocator.solve(f"node-{n}", {}, claims) is not None
    return getattr(shared, "iterated", 0)


@pytest.mark.parametrize("nodes", [1, 10, 40])
def test_shared_counter_bookkeeping_reads_unrelated_shared_allocations_once_per_cycle(
    nodes: int,
) -> None:
    """Before: each device of each node's counter pool scanned every shared
    allocation (pool devices x shared allocations, per node)."""
    assert filter_one_pod(nodes, shared_elsewhere(500)) <= 500


def test_pre_filter_view_of_devices_in_use_copies_nothing_of_the_index() -> None:
    """Before: a frozenset of every device in use, built per pod."""
    store = FakeStore()
    tracker = ClaimTracker(store)
    for i in range(300):
        result = {"request": "r", "driver": "drv", "pool": "p", "device": f"dev-{i}"}
        claim = (
            make_claim(f"c{i}")
            .uid(f"u{i}")
            .resource_version("1")
            .allocation({"devices": {"results": [result]}})
            .obj()
        )
        store.objects[object_key(claim)] = claim
        tracker.claim_changed(None, claim)
    index = tracker._index  # the one seam: count what reading it costs
    index.exclusive = CountingDict(index.exclusive)
    index.shared = CountingDict(index.shared)
    state = tracker.allocated_state()
    assert index.exclusive.iterated == 0
    assert index.shared.iterated == 0
    assert ("drv", "p", "dev-7") in state.devices  # the view still answers
    assert ("drv", "p", "nope") not in state.devices


def test_selector_results_per_device_are_bounded_in_number_and_size() -> None:
    env = steady_cel()
    device = CelDevice("driver-a", {"model": {"string": "x"}}, {})
    padding = "x" * 9000  # ~9 KiB of expression text each
    for i in range(200):
        expression = f'device.attributes["driver-a"].model != "{i}" && "{padding}" != ""'
        assert env.compile(expression).matches(device) is True
    assert len(device.results) <= 16
    kept = sum(sys.getsizeof(key) for key in device.results)
    assert kept < 64 * 16  # small keys, not the expressions' text
    assert cel.MAX_RESULTS_PER_DEVICE == 16


def test_a_deallocation_does_not_scan_every_shared_allocation() -> None:
    """Before: dropping a shared allocation's capacity scanned every shared
    allocation of the cluster to see whether its device was still shared."""
    store = FakeStore()
    tracker = ClaimTracker(store)

    def shared_claim(i: int, device: str) -> dict[str, Any]:
        result = {
            "request": "r",
            "driver": "drv",
            "pool": "p",
            "device": device,
            "shareID": f"s{i}",
            "consumedCapacity": {"bw": "1"},
        }
        return (
            make_claim(f"c{i}")
            .uid(f"u{i}")
            .resource_version("1")
            .allocation({"devices": {"results": [result]}})
            .obj()
        )

    claims = [shared_claim(i, f"nic-{i}") for i in range(300)]
    for claim in claims:
        store.objects[object_key(claim)] = claim
        tracker.claim_changed(None, claim)
    index = tracker._index  # the one seam: count what a deallocation reads
    index.shared = CountingDict(index.shared)
    del store.objects[object_key(claims[0])]
    tracker.claim_changed(claims[0], None)
    assert index.shared.iterated == 0
    assert ("drv", "p", "nic-0") not in tracker.allocated_state().capacity
    assert ("drv", "p", "nic-1") in tracker.allocated_state().capacity
