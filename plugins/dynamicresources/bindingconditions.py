"""Device binding conditions (DRADeviceBindingConditions, beta on in 1.36). Pure.

A device may carry ``bindingConditions`` and ``bindingFailureConditions``;
the allocator copies them into the allocation result. The claim is *ready*
when, for every such result, the driver's ``status.devices`` entry for the
same driver/pool/device has every binding condition True and no failure
condition True. A True failure condition means *failed*; a claim not ready
``bindingTimeout`` after ``allocationTimestamp`` has *timed out*. PreBind
waits for ready; Filter treats failed and timed-out claims as unavailable,
so PostFilter deallocates them and other devices can be tried.
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Mapping
from typing import Any

from plugins.dynamicresources.model import Raw

_EMPTY: Mapping[str, Any] = {}


class Binding(enum.Enum):
    NONE = "none"  # no result has binding conditions
    READY = "ready"
    PENDING = "pending"
    FAILED = "failed"
    TIMED_OUT = "timeout"


def _results(claim: Raw) -> list[Mapping[str, Any]]:
    allocation = (claim.get("status") or _EMPTY).get("allocation") or _EMPTY
    return [
        r
        for r in (allocation.get("devices") or _EMPTY).get("results") or ()
        if r.get("bindingConditions")
    ]


def has_binding_conditions(claim: Raw) -> bool:
    return bool(_results(claim))


def _timestamp(text: str) -> float | None:
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def binding_state(claim: Raw, now_wall: float, timeout: float) -> Binding:
    results = _results(claim)
    if not results:
        return Binding.NONE
    devices = {
        (d.get("driver"), d.get("pool"), d.get("device")): {
            c.get("type"): c.get("status") for c in d.get("conditions") or ()
        }
        for d in (claim.get("status") or _EMPTY).get("devices") or ()
    }
    ready = True
    for result in results:
        conditions = devices.get((result.get("driver"), result.get("pool"), result.get("device")))
        if conditions is None:
            ready = False
            continue
        if any(conditions.get(c) == "True" for c in result.get("bindingFailureConditions") or ()):
            return Binding.FAILED
        if not all(conditions.get(c) == "True" for c in result.get("bindingConditions") or ()):
            ready = False
    if ready:
        return Binding.READY
    allocation = (claim.get("status") or _EMPTY).get("allocation") or _EMPTY
    started = _timestamp(str(allocation.get("allocationTimestamp") or ""))
    if started is not None and now_wall > started + timeout:
        return Binding.TIMED_OUT
    return Binding.PENDING
