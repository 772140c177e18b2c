"""A point-in-time copy of the cache, for the cache comparer.

``nodes`` maps every node name the cache knows, ghosts (deleted nodes that
still hold pods, ``node`` None) included, to a clone of its NodeInfo;
``assumed_since`` maps the UID of each assumed pod to the monotonic time it
was assumed. The copy is the caller's: the cache never touches it again.

``node_views`` renders what the cache believes of each (non-ghost) node as
plain JSON: labels, taints, allocatable, the summed requests of its pods
(``pods`` is their number) and their keys. The chaos suite compares it with
what it computes itself from the API's objects; upstream's cache dumper
(SIGUSR2) prints the same per-node facts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework.nodeinfo import NodeInfo
from scheduler.framework.resource import PODS, Resource


@dataclass(frozen=True)
class CacheDump:
    nodes: Mapping[str, NodeInfo]
    assumed_since: Mapping[str, float]

    def node_views(self) -> dict[str, dict[str, Any]]:
        """Node name -> what the cache holds for it (ghost nodes left out)."""
        return {name: node_view(info) for name, info in self.nodes.items() if info.node is not None}


def _amounts(resource: Resource) -> dict[str, int]:
    return {name: resource.get(name) for name in resource.names()}


def node_view(info: NodeInfo) -> dict[str, Any]:
    """One node as the cache holds it, in JSON types (see the module docstring)."""
    node = info.node
    assert node is not None
    allocatable = _amounts(info.allocatable)
    if info.allocatable.allowed_pods:
        allocatable[PODS] = info.allocatable.allowed_pods
    requested = _amounts(info.requested)
    if info.pods:
        requested[PODS] = len(info.pods)
    return {
        "labels": dict(node.labels),
        "taints": [
            {"key": taint.key, "value": taint.value, "effect": taint.effect}
            for taint in node.taints
        ],
        "allocatable": allocatable,
        "requested": requested,
        "pods": sorted(pod.key for pod in info.pods.values()),
    }
