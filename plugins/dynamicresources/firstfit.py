"""``FirstFits``: the allocator's single-device picks, kept across cycles.

Most DRA pods ask for one device through one claim (a ``single`` plan): the
allocator's answer on a node is a first-fit scan over the node's pools
(``_Run._first_fit``), the first device in search order that is free,
selectable and fits. Pods made from one template ask alike, and on most
nodes nothing changes between two of them, yet every cycle scanned every
feasible node again (~230 nodes per pod at 500 nodes: most of DRA's cost).

The scan's outcome on a node is a function of: the node's pools (the pool
cache returns the same list object until a slice, a taint rule or the
node's labels change), the request's shape (class, class and request
selectors: selection, CEL included, is a pure function of device and
shape), and which of the node's devices are in exclusive use. So a pick is
kept per (node, shape) with the pools list it was made on and the set of the
node's devices in use then, and reused while both are unchanged: the same
device (or the same "none fits") a fresh scan would find.

Kept only where nothing else can move the outcome: a request without
capacity requests, on a node none of whose devices is shared
(``allowMultipleAllocations``), consumes counters, carries taints or has a
capacity a request must ask for. Errors and timeouts are never kept (the
scan raised, nothing was stored). Bounded: cleared at ``LIMIT`` entries.
Pure and synchronous; owned by the plugin beside the pool cache.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from typing import Any

from plugins.dynamicresources.model import Device, DeviceID, Slice
from plugins.dynamicresources.pools import Pool

Pick = tuple[Device, Slice] | None  # None: no device of the node fits
Key = tuple[Any, ...]
InUse = tuple[frozenset[DeviceID], ...]

LIMIT = 200_000


class FirstFits:
    __slots__ = ("_entries", "_simple", "hits")

    def __init__(self) -> None:
        self._entries: dict[Key, tuple[list[Pool], InUse, Pick]] = {}
        self._simple: dict[int, tuple[list[Pool], bool]] = {}
        self.hits = 0

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def in_use(pools: list[Pool], devices: AbstractSet[DeviceID]) -> InUse:
        """The node's devices in exclusive use, pool by pool."""
        return tuple(frozenset(devices & pool.device_ids) for pool in pools)

    def get(self, key: Key, pools: list[Pool], in_use: InUse) -> tuple[Pick] | None:
        """The kept pick (in a 1-tuple: its value may be None), or None."""
        entry = self._entries.get(key)
        if entry is None or entry[0] is not pools or entry[1] != in_use:
            return None
        self.hits += 1
        return (entry[2],)

    def keep(self, key: Key, pools: list[Pool], in_use: InUse, pick: Pick) -> None:
        if not self._is_simple(pools):
            return
        if len(self._entries) >= LIMIT or len(self._simple) >= LIMIT:
            self._entries.clear()
            self._simple.clear()
        self._entries[key] = (pools, in_use, pick)

    def _is_simple(self, pools: list[Pool]) -> bool:
        known = self._simple.get(id(pools))
        if known is not None and known[0] is pools:
            return known[1]
        simple = all(
            _simple_device(device)
            for pool in pools
            for slice_ in pool.slices
            for device in slice_.devices
        )
        self._simple[id(pools)] = (pools, simple)
        return simple


def _simple_device(device: Device) -> bool:
    return not (
        device.allow_multiple
        or device.consumes_counters
        or device.taints
        or not device.whole_capacity_fits
    )
