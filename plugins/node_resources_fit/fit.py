"""Resource fit, the pure core of NodeResourcesFit's Filter (upstream ``fitsRequest``).

A pod fits a node when the node has room for one more pod and, for every
resource the pod requests (cpu, memory, ephemeral-storage, and every scalar
resource with a non-zero request), ``request <= allocatable - requested``.
Every shortfall is reported, in that order. A shortfall is *unresolvable* when
the request exceeds the node's whole allocatable: evicting pods cannot help.
Extended resources named in ``ignored`` (or whose domain prefix is in
``ignored_groups``) are not checked; native resources never are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.framework import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Node, NodeInfo, Pod, Resource
from scheduler.framework.resource import (
    is_extended_resource_name,
    is_native_resource_name,
    is_scalar_resource_name,
)

__all__ = [
    "InsufficientResource",
    "any_requested_resource_decreased",
    "any_requested_resource_increased",
    "fits",
    "fits_request",
    "insufficient_reason",
    "is_extended_resource_name",
    "is_fit",
    "is_native_resource_name",
    "is_scalar_resource_name",
]

REASON_TOO_MANY_PODS = "Too many pods"

_NO_NAMES: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class InsufficientResource:
    resource: str
    reason: str
    requested: int
    used: int
    capacity: int
    unresolvable: bool = False


def insufficient_reason(resource: str) -> str:
    return f"Insufficient {resource}"


def _ignored(name: str, ignored: frozenset[str], ignored_groups: frozenset[str]) -> bool:
    if not is_extended_resource_name(name):
        return False
    return name in ignored or (bool(ignored_groups) and name.partition("/")[0] in ignored_groups)


def fits_request(
    request: Resource,
    node_info: NodeInfo,
    ignored: frozenset[str] = _NO_NAMES,
    ignored_groups: frozenset[str] = _NO_NAMES,
) -> list[InsufficientResource]:
    """Every way in which ``request`` does not fit ``node_info`` (empty: fits)."""
    allocatable = node_info.allocatable
    requested = node_info.requested
    pod_count = len(node_info.pods)
    # Fast path for the common case (runs per node per cycle): it fits.
    if (
        pod_count < allocatable.allowed_pods
        and request.milli_cpu <= allocatable.milli_cpu - requested.milli_cpu
        and request.memory <= allocatable.memory - requested.memory
        and request.ephemeral_storage <= allocatable.ephemeral_storage - requested.ephemeral_storage
        and not request.scalar
    ):
        return []
    insufficient: list[InsufficientResource] = []
    if pod_count + 1 > allocatable.allowed_pods:
        insufficient.append(
            InsufficientResource(PODS, REASON_TOO_MANY_PODS, 1, pod_count, allocatable.allowed_pods)
        )
    if not (request.milli_cpu or request.memory or request.ephemeral_storage or request.scalar):
        return insufficient
    for name, wanted, used, total in (
        (CPU, request.milli_cpu, requested.milli_cpu, allocatable.milli_cpu),
        (MEMORY, request.memory, requested.memory, allocatable.memory),
        (
            EPHEMERAL_STORAGE,
            request.ephemeral_storage,
            requested.ephemeral_storage,
            allocatable.ephemeral_storage,
        ),
    ):
        if wanted > 0 and wanted > total - used:
            insufficient.append(
                InsufficientResource(
                    name, insufficient_reason(name), wanted, used, total, wanted > total
                )
            )
    for name, wanted in request.scalar.items():
        if wanted == 0 or _ignored(name, ignored, ignored_groups):
            continue
        total = allocatable.scalar.get(name, 0)
        used = requested.scalar.get(name, 0)
        if wanted > total - used:
            insufficient.append(
                InsufficientResource(
                    name, insufficient_reason(name), wanted, used, total, wanted > total
                )
            )
    return insufficient


def fits(pod: Pod, node_info: NodeInfo) -> list[InsufficientResource]:
    """Upstream ``Fits``: the pod's request against the node, nothing ignored."""
    return fits_request(pod.requests, node_info)


def is_fit(pod: Pod, node: Node) -> bool:
    """Upstream ``isFit``: would the pod fit this node if it ran nothing?"""
    return not fits(pod, NodeInfo(node))


def any_requested_resource_increased(request: Resource, old: Resource, new: Resource) -> bool:
    """Did the node's allocatable grow in the pod count or in a resource the
    pod requests? (``old``/``new`` are the node's allocatable before/after.)"""
    if new.allowed_pods > old.allowed_pods:
        return True
    if (
        (request.milli_cpu > 0 and new.milli_cpu > old.milli_cpu)
        or (request.memory > 0 and new.memory > old.memory)
        or (request.ephemeral_storage > 0 and new.ephemeral_storage > old.ephemeral_storage)
    ):
        return True
    return any(
        wanted and new.scalar.get(name, 0) > old.scalar.get(name, 0)
        for name, wanted in request.scalar.items()
    )


def any_requested_resource_decreased(request: Resource, old: Resource, new: Resource) -> bool:
    """Did a pod's request (``old`` -> ``new``) shrink in a resource that
    ``request`` (the waiting pod's) asks for?"""
    return any(
        new.get(name) < old.get(name)
        for name in request.names()
        if name in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar_resource_name(name)
    )
