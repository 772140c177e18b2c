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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.handle import InformerAccess, RawObject

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
