"""Resource pools visible from one node (upstream ``GatherPools``, incubating).

A pool is the set of ResourceSlices sharing ``(driver, pool.name)``. Only the
highest generation seen counts; a pool whose slice count at that generation
is short of ``resourceSliceCount`` is *incomplete* (no device is allocated
from it), one with a newer generation elsewhere is obsolete (ignored), and
one with duplicate device names, duplicate counter sets or a device
consuming an unknown counter is *invalid* (with the reason).

Order is part of the contract (allocation is first-fit): pools sorted by
driver then pool name, pools with any binding-condition device last; slices
inside a pool sorted by name. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from plugins.dynamicresources.model import Device, DeviceID, Slice
from plugins.dynamicresources.nodeselector import node_selector_matches

PoolID = tuple[str, str]


@dataclass(eq=False, slots=True)
class Pool:
    id: PoolID
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    slices: list[Slice] = field(default_factory=list)  # device slices targeting the node
    other_slices: list[Slice] = field(default_factory=list)  # only for counter bookkeeping
    counter_sets: dict[str, Mapping[str, Decimal]] = field(default_factory=dict)
    # every device of ``slices``, for the allocator's "anything free here?" test
    device_ids: frozenset[DeviceID] = frozenset()

    def __str__(self) -> str:
        return f"{self.id[0]}/{self.id[1]}"

    def has_binding_conditions(self) -> bool:
        return any(d.binding_conditions for s in self.slices for d in s.devices)


def node_matches(
    node_name: str,
    labels: Mapping[str, str],
    name_to_match: str,
    all_nodes: bool,
    selector: Mapping[str, object] | None,
) -> bool:
    if name_to_match:
        return node_name == name_to_match
    if all_nodes:
        return True
    if selector is not None:
        return node_selector_matches(selector, node_name, labels)
    return False


def device_matches_node(device: Device, node_name: str, labels: Mapping[str, str]) -> bool:
    return node_matches(node_name, labels, device.node_name, device.all_nodes, device.node_selector)


def _relevant(slice_: Slice, node_name: str, labels: Mapping[str, str]) -> bool | None:
    """Whether the slice serves the node; None for a slice to skip silently."""
    if slice_.shared_counters:
        return True
    if slice_.node_name or slice_.all_nodes or slice_.node_selector is not None:
        return node_matches(
            node_name, labels, slice_.node_name, slice_.all_nodes, slice_.node_selector
        )
    if slice_.per_device_node_selection:
        return any(device_matches_node(d, node_name, labels) for d in slice_.devices)
    return None


def gather_pools(
    slices_for_node: Sequence[Slice],
    node_name: str,
    labels: Mapping[str, str],
    slices_by_pool: Mapping[PoolID, Sequence[Slice]],
    *,
    partitionable: bool = True,
) -> list[Pool]:
    """``partitionable`` is DRAPartitionableDevices: when off, slices with
    counter sets or per-device node selection are skipped (upstream's
    ``GatherPools``) and counters are not validated (``buildPool``)."""
    collected: dict[PoolID, list[Slice]] = {}
    for slice_ in slices_for_node:
        if not partitionable and (slice_.shared_counters or slice_.per_device_node_selection):
            continue
        if not _relevant(slice_, node_name, labels):
            continue
        held = collected.get(slice_.pool_id)
        if held is None or slice_.generation > held[0].generation:
            collected[slice_.pool_id] = [slice_]
        elif slice_.generation == held[0].generation:
            held.append(slice_)
    normal: list[Pool] = []
    conditioned: list[Pool] = []
    for pool_id, slices in collected.items():
        generation, expected = slices[0].generation, slices[0].slice_count
        all_for_pool: list[Slice] | None = None
        if len(slices) != expected:
            everywhere = slices_by_pool.get(pool_id, ())
            if any(s.generation > generation for s in everywhere):
                continue  # obsolete: a newer generation is being published
            all_for_pool = [s for s in everywhere if s.generation == generation]
            if len(all_for_pool) != expected:
                normal.append(Pool(pool_id, incomplete=True))
                continue
        pool = build_pool(pool_id, slices, all_for_pool, partitionable=partitionable)
        (conditioned if pool.has_binding_conditions() else normal).append(pool)
    normal.sort(key=lambda p: p.id)
    conditioned.sort(key=lambda p: p.id)
    return normal + conditioned


def build_pool(
    pool_id: PoolID,
    slices: list[Slice],
    all_for_pool: list[Slice] | None,
    *,
    partitionable: bool = True,
) -> Pool:
    slices = sorted(slices, key=lambda s: s.name)
    device_slices = [s for s in slices if not s.shared_counters]
    counter_slices = [s for s in slices if s.shared_counters]
    names: set[str] = set()
    for slice_ in device_slices:
        for device in slice_.devices:
            if device.name in names:
                return Pool(
                    pool_id, invalid=True, invalid_reason=f"duplicate device name {device.name}"
                )
            names.add(device.name)
    counter_sets: dict[str, Mapping[str, Decimal]] = {}
    for slice_ in counter_slices:
        for set_name, counters in slice_.shared_counters:
            if set_name in counter_sets:
                return Pool(
                    pool_id, invalid=True, invalid_reason=f"duplicate counter set name {set_name}"
                )
            counter_sets[set_name] = counters
    problem = _check_consumption(counter_sets, slices) if partitionable else ""
    if problem:
        return Pool(pool_id, invalid=True, invalid_reason=problem)
    pool = Pool(
        pool_id,
        slices=device_slices,
        counter_sets=counter_sets,
        device_ids=frozenset(d.id for s in device_slices for d in s.devices),
    )
    if all_for_pool is not None and len(all_for_pool) != len(slices):
        targeting = {s.name for s in slices}
        pool.other_slices = [s for s in all_for_pool if s.name not in targeting]
        problem = _check_consumption(counter_sets, pool.other_slices) if partitionable else ""
        if problem:
            return Pool(pool_id, invalid=True, invalid_reason=problem)
    return pool


def _check_consumption(
    counter_sets: Mapping[str, Mapping[str, Decimal]], slices: Sequence[Slice]
) -> str:
    for slice_ in slices:
        for device in slice_.devices:
            for set_name, counters in device.consumes_counters:
                counter_set = counter_sets.get(set_name)
                if counter_set is None:
                    return f"counter set {set_name} not found"
                for counter in counters:
                    if counter not in counter_set:
                        return f"counter {counter} not found in counter set {set_name}"
    return ""


class PoolCache:
    """Pools per node, kept across scheduling cycles: they depend only on the
    slices and the node's name and labels, not on which devices are in use.
    ``invalidate`` on any ResourceSlice change; a node whose labels changed
    is recomputed on its next lookup."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[Mapping[str, str], list[Pool]]] = {}

    def invalidate(self) -> None:
        self._entries.clear()

    def get(
        self,
        node_name: str,
        labels: Mapping[str, str],
        compute: Callable[[], list[Pool]],
    ) -> list[Pool]:
        entry = self._entries.get(node_name)
        if entry is not None and entry[0] == labels:
            return entry[1]
        pools = compute()
        self._entries[node_name] = (dict(labels), pools)
        return pools
