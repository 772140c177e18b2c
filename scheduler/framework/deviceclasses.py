"""Extended resources backed by a DeviceClass (DRAExtendedResource, beta on in 1.36).

A DeviceClass serves the extended resource named in its
``spec.extendedResourceName`` and, always, the implicit name
``deviceclass.resource.kubernetes.io/<class>``. When two classes name the
same resource the newer one (creationTimestamp) wins, ties going to the
lexicographically smaller name. A pod requesting such a resource on a node
that does not advertise it (allocatable 0) gets devices through
DynamicResources, and NodeResourcesFit steps aside for that resource.

Shared by both plugins; each keeps its own index, fed by the DeviceClass
informer (``subscribe``). Pure apart from that index; synchronous.

Scoring (upstream ``calculateDRAExtendedResourceAllocatableRequest``): when
a scoring strategy lists such a resource and the node does not advertise it,
NodeResourcesFit and NodeResourcesBalancedAllocation count the node's
devices of the serving class as its allocatable and those in use as its
requested amount. The counts come from DynamicResources' shared DRA state,
published in the process's ``DraDevicesSlot`` (``dra_devices``): a slot
whose provider stays None (DynamicResources absent) leaves the resource out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from scheduler.framework.handle import InformerAccess, RawObject
from scheduler.framework.nodeinfo import NodeInfo
from scheduler.framework.shared import SharedKey

IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"
DEVICE_CLASSES = "deviceclasses"
_EMPTY: Mapping[str, Any] = {}


def is_dra_extended_resource_name(name: str) -> bool:
    """Names DRA may back: extended resources (a domain other than
    ``kubernetes.io``, not a quota ``requests.`` name) and implicit class names."""
    if name.startswith(IMPLICIT_PREFIX):
        return True
    domain, slash, _ = name.partition("/")
    if not slash or name.startswith("requests."):
        return False
    return not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io"))


class ExtendedResourceClasses:
    def __init__(self) -> None:
        # class name -> (explicit resource name, creationTimestamp)
        self._classes: dict[str, tuple[str, str]] = {}
        self._explicit: dict[str, str] = {}

    @classmethod
    def subscribe(cls, informers: InformerAccess) -> ExtendedResourceClasses:
        index = cls()
        informers.on_change(DEVICE_CLASSES, index.changed)
        return index

    def changed(self, old: RawObject | None, new: RawObject | None) -> None:
        if old is not None:
            self._classes.pop((old.get("metadata") or _EMPTY).get("name", ""), None)
        if new is not None:
            metadata = new.get("metadata") or _EMPTY
            spec = new.get("spec") or _EMPTY
            self._classes[str(metadata.get("name", ""))] = (
                str(spec.get("extendedResourceName") or ""),
                str(metadata.get("creationTimestamp") or ""),
            )
        winners: dict[str, tuple[str, str]] = {}
        for name in sorted(self._classes):  # ties keep the smaller name
            resource, created = self._classes[name]
            held = winners.get(resource)
            # the newer class wins (RFC 3339 timestamps sort by time)
            if resource and (held is None or created > held[1]):
                winners[resource] = (name, created)
        self._explicit = {resource: name for resource, (name, _) in winners.items()}

    def class_for(self, resource: str) -> str | None:
        """The DeviceClass serving ``resource``, if any."""
        if resource.startswith(IMPLICIT_PREFIX):
            name = resource.removeprefix(IMPLICIT_PREFIX)
            return name if name in self._classes else None
        return self._explicit.get(resource)

    def delegated(self, resource: str, node_allocatable: int) -> bool:
        """Whether DynamicResources, not the node's allocatable, serves
        ``resource`` on a node (upstream ``shouldDelegateResourceToDRA``)."""
        return node_allocatable <= 0 and self.class_for(resource) is not None

    def any_backed(self, resources: Mapping[str, int]) -> bool:
        return any(
            value and is_dra_extended_resource_name(name) and self.class_for(name) is not None
            for name, value in resources.items()
        )


class DraDeviceCounts(Protocol):
    def class_devices(
        self, node_name: str, labels: Mapping[str, str], class_name: str
    ) -> tuple[int, int]:
        """(devices of the class usable on the node, those in use); (0, 0)
        when unknown or on a broken class selector."""
        ...


@dataclass(slots=True)
class DraDevicesSlot:
    """Where DynamicResources publishes its device counts, once per process."""

    provider: DraDeviceCounts | None = None


DRA_DEVICES: SharedKey[DraDevicesSlot] = SharedKey("framework/dra-devices")


def dra_devices(handle: object) -> DraDevicesSlot | None:
    """The process's slot (None for a handle without shared objects: tests)."""
    shared = getattr(handle, "shared", None)
    return None if shared is None else shared(DRA_DEVICES, DraDevicesSlot)


def dra_allocatable_and_used(
    extended: ExtendedResourceClasses | None,
    slot: DraDevicesSlot | None,
    node_info: NodeInfo,
    name: str,
) -> tuple[int, int] | None:
    """(allocatable, in use) of a DRA-backed extended resource on a node that
    does not advertise it, or None (not backed, no DRA state, no device)."""
    if extended is None or slot is None or slot.provider is None:
        return None
    class_name = extended.class_for(name)
    node = node_info.node
    if class_name is None or node is None:
        return None
    capacity, used = slot.provider.class_devices(node.name, node.labels, class_name)
    return (capacity, used) if capacity > 0 else None
