"""How many devices of a DeviceClass a node has, and how many are in use:
what NodeResourcesFit and NodeResourcesBalancedAllocation score a DRA-backed
extended resource by (upstream noderesources ``calculateDRAResourceTotals``).

Counted as upstream: every ResourceSlice that serves the node (its node
name, all nodes, or its node selector; per device with per-device node
selection), every device of it that the class's selectors accept, in use if
the devices in use hold it (exclusively or shared). No pool checks, no
request selectors. A class selector that fails makes the counts (0, 0), so
the resource is left out of the score. Published once per process in the
framework's ``DraDevicesSlot``; synchronous, read in Score only.
"""

from __future__ import annotations

from collections.abc import Mapping

from plugins.dynamicresources.cel import CelEnvironment, SelectorError
from plugins.dynamicresources.inventory import DeviceInventory
from plugins.dynamicresources.model import Device, Slice
from plugins.dynamicresources.pools import device_matches_node, node_matches
from plugins.dynamicresources.state import ClaimTracker


class DeviceCounter:
    def __init__(self, inventory: DeviceInventory, tracker: ClaimTracker, cel: CelEnvironment):
        self._inventory = inventory
        self._tracker = tracker
        self._cel = cel

    def class_devices(
        self, node_name: str, labels: Mapping[str, str], class_name: str
    ) -> tuple[int, int]:
        device_class = self._inventory.classes.get(class_name)
        if device_class is None:
            return 0, 0
        in_use = self._tracker.allocated_state()
        capacity = used = 0
        try:
            for slice_ in self._inventory.slices():
                for device in _devices_for_node(slice_, node_name, labels):
                    if all(
                        self._cel.compile(expression).matches(device.cel)
                        for expression in device_class.selectors
                        if expression is not None
                    ):
                        capacity += 1
                        used += in_use.is_allocated(device.id)
        except SelectorError:
            return 0, 0
        return capacity, used


def _devices_for_node(
    slice_: Slice, node_name: str, labels: Mapping[str, str]
) -> tuple[Device, ...] | list[Device]:
    if slice_.per_device_node_selection:
        return [d for d in slice_.devices if device_matches_node(d, node_name, labels)]
    if slice_.all_nodes or slice_.node_name == node_name:
        return slice_.devices
    if slice_.node_name:
        return ()
    if slice_.node_selector is not None and not node_matches(
        node_name, labels, "", False, slice_.node_selector
    ):
        return ()
    return slice_.devices
