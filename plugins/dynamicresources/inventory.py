"""What DynamicResources knows about devices, fed by the informers, and the
pure checks over it.

``DeviceInventory`` keeps every ResourceSlice and DeviceClass parsed once per
object version (a slice that cannot be parsed is left out, with a warning),
and each node's pools across cycles (``PoolCache``, reset by any slice
change). With DRADeviceTaintRules, the DeviceTaintRules it is fed add their
taint to every device they select (driver, pool, device; each unset field
matches all), as upstream's tracker ``applyPatches``: the slices it hands
out carry those taints, recomputed when a slice or a rule changes.
``validate_requests`` is PreFilter's class check; ``prioritized_list_score``
is Score's sum over ``firstAvailable`` choices.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from plugins.dynamicresources.firstfit import FirstFits
from plugins.dynamicresources.model import (
    FIRST_AVAILABLE_MAX_SIZE,
    DeviceClass,
    DeviceTaint,
    ModelError,
    Raw,
    Slice,
    parse_class,
    parse_slice,
)
from plugins.dynamicresources.pools import PoolCache
from plugins.dynamicresources.state import allocation_of, claim_key
from scheduler.framework import Status

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TaintRule:
    """A DeviceTaintRule's selector (None matches any) and taint."""

    driver: str | None
    pool: str | None
    device: str | None
    taint: DeviceTaint

    @classmethod
    def parse(cls, raw: Raw) -> TaintRule:
        spec = raw.get("spec") or {}
        selector = spec.get("deviceSelector") or {}
        taint = spec.get("taint") or {}
        return cls(
            selector.get("driver"),
            selector.get("pool"),
            selector.get("device"),
            DeviceTaint(
                taint.get("key") or "", taint.get("value") or "", taint.get("effect") or ""
            ),
        )

    def selects_slice(self, slice_: Slice) -> bool:
        return (self.driver is None or self.driver == slice_.driver) and (
            self.pool is None or self.pool == slice_.pool
        )


class DeviceInventory:
    def __init__(self) -> None:
        self._parsed: dict[str, Slice] = {}  # as the informer has them
        self._slices: dict[str, Slice] = {}  # with the taint rules' taints
        self._rules: dict[str, TaintRule] = {}
        self.classes: dict[str, DeviceClass] = {}
        self.pools = PoolCache()
        self.first_fits = FirstFits()  # checked against the pool cache's lists

    def slices(self) -> list[Slice]:
        return list(self._slices.values())

    def slice_changed(self, old: Raw | None, new: Raw | None) -> None:
        self.pools.invalidate()
        if old is not None:
            name = (old.get("metadata") or {}).get("name", "")
            self._parsed.pop(name, None)
            self._slices.pop(name, None)
        if new is not None:
            try:
                parsed = parse_slice(new)
            except ModelError as error:
                log.warning("DynamicResources: ignoring ResourceSlice: %s", error)
                return
            self._parsed[parsed.name] = parsed
            self._slices[parsed.name] = self._tainted(parsed)

    def taint_rule_changed(self, old: Raw | None, new: Raw | None) -> None:
        """DeviceTaintRule handler: every slice is re-tainted (rare events)."""
        if old is not None:
            self._rules.pop((old.get("metadata") or {}).get("name", ""), None)
        if new is not None:
            self._rules[(new.get("metadata") or {}).get("name", "")] = TaintRule.parse(new)
        self.pools.invalidate()
        self._slices = {name: self._tainted(s) for name, s in self._parsed.items()}

    def _tainted(self, slice_: Slice) -> Slice:
        rules = [rule for rule in self._rules.values() if rule.selects_slice(slice_)]
        if not rules:
            return slice_
        devices = []
        for device in slice_.devices:
            extra = tuple(
                rule.taint for rule in rules if rule.device is None or rule.device == device.name
            )
            # the selector-result cache (device.cel) is shared: taints do not change it
            devices.append(replace(device, taints=device.taints + extra) if extra else device)
        return replace(slice_, devices=tuple(devices))

    def class_changed(self, old: Raw | None, new: Raw | None) -> None:
        if old is not None:
            self.classes.pop((old.get("metadata") or {}).get("name", ""), None)
        if new is not None:
            parsed = parse_class(new)
            self.classes[parsed.name] = parsed


def validate_requests(
    claim: Raw, classes: Mapping[str, DeviceClass], *, prioritized_list: bool = True
) -> Status | None:
    """Upstream PreFilter's check of an unallocated claim's requests: a
    known request type naming classes that exist; ``firstAvailable`` only
    with ``prioritized_list`` (DRAPrioritizedList)."""
    devices = (claim.get("spec") or {}).get("devices") or {}
    for request in devices.get("requests") or ():
        name = request.get("name", "")
        if request.get("exactly"):
            checks = [(name, request["exactly"].get("deviceClassName", ""))]
        elif request.get("firstAvailable"):
            if not prioritized_list:
                return Status.unresolvable(
                    f"resource claim {claim_key(claim)}, request {name}: has subrequests,"
                    " but the DRAPrioritizedList feature is disabled"
                )
            checks = [
                (f"{name}/{sub.get('name', '')}", sub.get("deviceClassName", ""))
                for sub in request["firstAvailable"]
            ]
        else:
            return Status.unresolvable(
                f"resource claim {claim_key(claim)}, request {name}: unknown request type"
            )
        for request_name, class_name in checks:
            if not class_name:
                return Status.as_error(f"request {request_name}: unsupported request type")
            if class_name not in classes:
                return Status.unresolvable(
                    f"request {request_name}: device class {class_name} does not exist"
                )
    return None


def prioritized_list_score(
    claims: Sequence[Raw], allocations: Mapping[int, Mapping[str, Any]]
) -> int:
    """Sum over every claim's ``firstAvailable`` requests of 8 minus the
    chosen subrequest's position; a claim's allocation is the one made for
    this node (``allocations`` by claim index) or the one it already has."""
    total = 0
    for index, claim in enumerate(claims):
        allocation = allocations.get(index) or allocation_of(claim) or {}
        chosen = {
            result.get("request", "")
            for result in (allocation.get("devices") or {}).get("results") or ()
        }
        for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ():
            for position, sub in enumerate(request.get("firstAvailable") or ()):
                if f"{request.get('name')}/{sub.get('name')}" in chosen:
                    total += FIRST_AVAILABLE_MAX_SIZE - position
    return total
