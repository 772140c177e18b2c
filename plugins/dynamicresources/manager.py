"""The DRA state of the process, one for every profile (upstream's shared
DRA manager, ``WithSharedDRAManager``).

Every profile that enables DynamicResources gets the same ``DraManager``
through ``Handle.shared``: the claim tracker (assume cache, in-flight
allocations, device index), the device inventory (slices and classes, and
with them the cached selector results), the CEL environment and the
background claim writes. Two profiles therefore see each other's in-flight
allocations and never give one exclusive device to two claims; one
profile's Unreserve of a claim is awaited by another profile's PreBind of
that claim.

Invariants: built once per process, from what every profile's Handle has in
common (informers, clock, background runner), never from one profile's
arguments or event recorder; its informer handlers are registered once, so
each claim, slice or class event is applied once whatever the number of
profiles. Synchronous apart from the writes it runs in the background.
"""

from __future__ import annotations

from dataclasses import dataclass

from plugins.dynamicresources.cel import CelEnvironment
from plugins.dynamicresources.devicecounts import DeviceCounter
from plugins.dynamicresources.features import Features
from plugins.dynamicresources.inventory import DeviceInventory
from plugins.dynamicresources.state import ClaimTracker
from plugins.dynamicresources.writes import BackgroundWrites
from scheduler.framework import Handle, SharedKey
from scheduler.framework.deviceclasses import dra_devices

RESOURCE_CLAIMS = "resourceclaims"
RESOURCE_SLICES = "resourceslices"
DEVICE_CLASSES = "deviceclasses"
DEVICE_TAINT_RULES = "devicetaintrules"


@dataclass(frozen=True, slots=True)
class DraManager:
    tracker: ClaimTracker
    inventory: DeviceInventory
    cel: CelEnvironment
    writes: BackgroundWrites


MANAGER_KEY: SharedKey[DraManager] = SharedKey("DynamicResources/manager")


def build_manager(handle: Handle) -> DraManager:
    """The process's DRA state, subscribed to the informers."""
    informers = handle.informers
    features = Features.from_gates(handle.feature_gates)  # process-wide, as the state
    tracker = ClaimTracker(
        informers.store(RESOURCE_CLAIMS), consumable_capacity=features.consumable_capacity
    )
    inventory = DeviceInventory()
    informers.on_change(RESOURCE_CLAIMS, tracker.claim_changed)
    informers.on_change(RESOURCE_SLICES, inventory.slice_changed)
    informers.on_change(DEVICE_CLASSES, inventory.class_changed)
    if features.device_taint_rules:
        informers.on_change(DEVICE_TAINT_RULES, inventory.taint_rule_changed)
    cel = CelEnvironment(
        clock=handle.clock.now,
        list_type_attributes=features.list_type_attributes,
    )
    slot = dra_devices(handle)
    if slot is not None and features.extended_resource:
        # what NodeResourcesFit/BalancedAllocation score DRA-backed resources by
        slot.provider = DeviceCounter(inventory, tracker, cel)
    return DraManager(
        tracker=tracker,
        inventory=inventory,
        cel=cel,
        # A handle without a background runner (unit tests) runs writes on the loop.
        writes=BackgroundWrites(getattr(handle, "spawn", None)),
    )


def shared_manager(handle: Handle) -> DraManager:
    """The one ``DraManager`` of the process (built by the first profile that asks)."""
    return handle.shared(MANAGER_KEY, lambda: build_manager(handle))
