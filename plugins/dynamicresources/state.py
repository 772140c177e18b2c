"""Shared DRA state: the claim assume cache, in-flight allocations and the
index of devices in use (upstream's ``DefaultDRAManager`` claim tracker).

Three structures, kept together so that the set of devices in use is always
consistent (upstream's double-allocation race, kubernetes#136269, came from
building it from them at different moments):

- the **assume cache**: the informer's claims, overlaid with newer versions
  the scheduler wrote itself (PreBind's API responses) until the informer
  delivers an equal or newer resourceVersion;
- **in-flight allocations** by claim UID: set in Reserve, dropped after
  PreBind stored the written claim in the assume cache, or in Unreserve;
- the **device index**, recounted per claim on every change from its
  *effective* version (assumed if newer, else the informer's) or, while that
  holds no devices, from its in-flight allocation: exclusive devices with
  reference counts (admin-access results never count), shared devices by
  (device, shareID), and the capacity consumed per shared device.

``allocated_state()`` is views over the index: O(1) per pod, however many
allocations are in flight. All methods are synchronous and are called from
the event loop only (informer handlers, the scheduling cycle, the
synchronous parts of PreBind), never across an ``await``, so each reads a
consistent whole and no device is given to two claims that may not share it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from plugins.dynamicresources.allocator import AllocatedState
from plugins.dynamicresources.model import DeviceID, Raw
from scheduler.framework import ObjectStore, QuantityError, parse_quantity

_EMPTY: Mapping[str, Any] = {}


def claim_key(claim: Raw) -> str:
    metadata = claim.get("metadata") or _EMPTY
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"


def claim_uid(claim: Raw) -> str:
    return str((claim.get("metadata") or _EMPTY).get("uid") or "")


def allocation_of(claim: Raw) -> Mapping[str, Any] | None:
    allocation: Mapping[str, Any] | None = (claim.get("status") or _EMPTY).get("allocation")
    return allocation


def _version(claim: Raw) -> int:
    text = str((claim.get("metadata") or _EMPTY).get("resourceVersion") or "0")
    return int(text) if text.isdigit() else 0


@dataclass(frozen=True, slots=True)
class _Usage:
    exclusive: tuple[DeviceID, ...] = ()
    shared: tuple[tuple[DeviceID, str], ...] = ()
    capacity: tuple[tuple[DeviceID, Mapping[str, Decimal]], ...] = ()


def usage_of(allocation: Mapping[str, Any] | None, *, consumable_capacity: bool = True) -> _Usage:
    """The devices an allocation holds (admin access holds none). Without
    DRAConsumableCapacity a shared result holds its device exclusively
    (upstream ``foreachAllocatedDevice``)."""
    if not allocation:
        return _Usage()
    exclusive: list[DeviceID] = []
    shared: list[tuple[DeviceID, str]] = []
    capacity: list[tuple[DeviceID, Mapping[str, Decimal]]] = []
    for result in (allocation.get("devices") or _EMPTY).get("results") or ():
        if result.get("adminAccess"):
            continue
        device_id = (result.get("driver", ""), result.get("pool", ""), result.get("device", ""))
        share_id = result.get("shareID") if consumable_capacity else None
        if not share_id:
            exclusive.append(device_id)
            continue
        shared.append((device_id, str(share_id)))
        consumed: dict[str, Decimal] = {}
        for name, value in (result.get("consumedCapacity") or _EMPTY).items():
            try:
                consumed[name] = parse_quantity(str(value))
            except QuantityError:
                continue
        capacity.append((device_id, consumed))
    return _Usage(tuple(exclusive), tuple(shared), tuple(capacity))


@dataclass(slots=True)
class _Index:
    exclusive: dict[DeviceID, int] = field(default_factory=dict)
    shared: dict[tuple[DeviceID, str], int] = field(default_factory=dict)
    capacity: dict[DeviceID, dict[str, Decimal]] = field(default_factory=dict)
    # shared allocations per device: the capacity entry lives as long as one does
    sharing: dict[DeviceID, int] = field(default_factory=dict)

    def apply(self, usage: _Usage, sign: int) -> None:
        for device_id in usage.exclusive:
            _bump(self.exclusive, device_id, sign)
        for shared_id in usage.shared:
            _bump(self.shared, shared_id, sign)
            _bump(self.sharing, shared_id[0], sign)
        for device_id, consumed in usage.capacity:
            totals = self.capacity.setdefault(device_id, {})
            for name, value in consumed.items():
                totals[name] = totals.get(name, Decimal(0)) + sign * value
            if sign < 0 and device_id not in self.sharing:
                del self.capacity[device_id]


def _bump(counts: dict[Any, int], key: Any, sign: int) -> None:
    count = counts.get(key, 0) + sign
    if count > 0:
        counts[key] = count
    else:
        counts.pop(key, None)


class ClaimTracker:
    def __init__(self, store: ObjectStore, *, consumable_capacity: bool = True) -> None:
        self._store = store
        self._consumable_capacity = consumable_capacity
        self._assumed: dict[str, Raw] = {}
        self._in_flight: dict[str, Raw] = {}
        # uid -> the usage of its in-flight claim, computed once when signalled
        self._in_flight_usage: dict[str, _Usage] = {}
        # uid -> the usage of its effective (written) version, when it holds devices
        self._usage: dict[str, _Usage] = {}
        # uid -> the usage counted in the index: the written one, else the in-flight one
        self._counted: dict[str, _Usage] = {}
        self._index = _Index()

    # ----------------------------------------------------------- assume cache
    def get(self, namespace: str, name: str) -> Raw | None:
        key = f"{namespace}/{name}"
        informer = self._store.get(key)
        assumed = self._assumed.get(key)
        if assumed is None:
            return informer
        if informer is not None and (
            claim_uid(informer) != claim_uid(assumed) or _version(informer) >= _version(assumed)
        ):
            return informer
        return assumed

    def claims(self) -> Iterator[Raw]:
        """Every claim in its effective version."""
        seen = set()
        for claim in self._store.list():
            key = claim_key(claim)
            seen.add(key)
            namespace, _, name = key.partition("/")
            effective = self.get(namespace, name)
            if effective is not None:
                yield effective
        for key, claim in self._assumed.items():
            if key not in seen:
                yield claim

    def claim_changed(self, old: Raw | None, new: Raw | None) -> None:
        """Informer handler: drop superseded assumptions, reindex."""
        if old is not None and (new is None or claim_uid(old) != claim_uid(new)):
            self._assumed.pop(claim_key(old), None)
            self._reindex(claim_uid(old), None)
        if new is not None:
            namespace, _, name = claim_key(new).partition("/")
            effective = self.get(namespace, name)
            if effective is new or effective == new:
                self._assumed.pop(claim_key(new), None)
            self._reindex(claim_uid(new), effective)

    def assume(self, claim: Raw) -> None:
        """Keep the API's answer to our write until the informer catches up."""
        key = claim_key(claim)
        informer = self._store.get(key)
        if informer is not None and _version(informer) >= _version(claim):
            return
        self._assumed[key] = claim
        self._reindex(claim_uid(claim), claim)

    def restore(self, namespace: str, name: str) -> None:
        """Forget an assumed version: back to the informer's."""
        key = f"{namespace}/{name}"
        if self._assumed.pop(key, None) is not None:
            informer = self._store.get(key)
            self._reindex(claim_uid(informer) if informer else "", informer)

    # -------------------------------------------------------------- in flight
    def signal_in_flight(self, uid: str, claim: Raw) -> None:
        self._in_flight[uid] = claim
        self._in_flight_usage[uid] = usage_of(
            allocation_of(claim), consumable_capacity=self._consumable_capacity
        )
        self._recount(uid)

    def in_flight(self, uid: str) -> Raw | None:
        return self._in_flight.get(uid)

    def remove_in_flight(self, uid: str) -> bool:
        self._in_flight_usage.pop(uid, None)
        removed = self._in_flight.pop(uid, None) is not None
        self._recount(uid)
        return removed

    # ------------------------------------------------------------ device index
    def _reindex(self, uid: str, claim: Raw | None) -> None:
        if not uid:
            return
        self._usage.pop(uid, None)
        if claim is not None:
            usage = usage_of(allocation_of(claim), consumable_capacity=self._consumable_capacity)
            if usage.exclusive or usage.shared:
                self._usage[uid] = usage
        self._recount(uid)

    def _recount(self, uid: str) -> None:
        """Count ``uid`` once in the index: its written version's usage if it
        holds devices, else its in-flight allocation's, else nothing."""
        usage = self._usage.get(uid) or self._in_flight_usage.get(uid)
        previous = self._counted.pop(uid, None)
        if previous is not None:
            self._index.apply(previous, -1)
        if usage is not None:
            self._counted[uid] = usage
            self._index.apply(usage, +1)

    def allocated_state(self) -> AllocatedState:
        """Devices in use now: written claims and every in-flight allocation.

        Live views over the index, which counts both as they change (Reserve,
        PreBind, Unreserve, informer handlers), so the cost per pod is
        constant: no copy, no walk over the in-flight allocations. Valid for
        the synchronous scheduling cycle that asks: nothing changes the index
        between its PreFilter and its Reserve."""
        index = self._index
        return AllocatedState(
            index.exclusive.keys(),
            index.shared.keys(),
            MappingProxyType(index.capacity),
            shared_devices=index.sharing.keys(),
        )

    def devices_in_use(self) -> Mapping[DeviceID, int]:
        """Exclusive devices and how many written claims hold each (tests, debug)."""
        counts: dict[DeviceID, int] = {}
        for usage in self._usage.values():
            for device_id in usage.exclusive:
                counts[device_id] = counts.get(device_id, 0) + 1
        return counts
