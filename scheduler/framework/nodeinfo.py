"""NodeInfo: one node with the pods on it and their summed requests.

Owned by the cache, which mutates it under its own bookkeeping and bumps
``generation`` on every change; the scheduling cycle only ever sees clones
taken into a snapshot. ``clone`` is shallow over the (immutable) pods.

Invariants: ``requested`` (and ``non_zero_requested``) equal the sum over
``pods``; ``used_ports`` counts the host ports of ``pods``.
"""

from __future__ import annotations

from scheduler.framework.objects import HostPort, Node, Pod
from scheduler.framework.resource import ZERO, Resource


class NodeInfo:
    __slots__ = (
        "_node",
        "allocatable",
        "generation",
        "name",
        "non_zero_requested",
        "pods",
        "pods_with_affinity",
        "requested",
        "used_ports",
    )

    def __init__(self, node: Node | None = None, generation: int = 0) -> None:
        # ``name`` and ``allocatable`` are plain attributes kept in step with
        # ``node``: they are read per node per plugin on the hot path.
        self.name = ""
        self.allocatable: Resource = ZERO
        self._node: Node | None = None
        self.node = node
        self.pods: dict[str, Pod] = {}
        self.requested: Resource = ZERO
        self.non_zero_requested: Resource = ZERO
        self.used_ports: dict[HostPort, int] = {}
        self.pods_with_affinity: dict[str, Pod] = {}
        self.generation = generation

    @property
    def node(self) -> Node | None:
        return self._node

    @node.setter
    def node(self, node: Node | None) -> None:
        self._node = node
        self.name = node.name if node else ""
        self.allocatable = node.allocatable if node else ZERO

    def add_pod(self, pod: Pod) -> None:
        previous = self.pods.get(pod.uid)
        if previous is not None:
            self.remove_pod(previous)
        self.pods[pod.uid] = pod
        self.requested = self.requested + pod.requests
        self.non_zero_requested = self.non_zero_requested + pod.non_zero_requests
        for port in pod.host_ports:
            self.used_ports[port] = self.used_ports.get(port, 0) + 1
        if pod.has_required_affinity():
            self.pods_with_affinity[pod.uid] = pod

    def remove_pod(self, pod: Pod) -> bool:
        """Remove by UID; the stored copy's requests are subtracted."""
        stored = self.pods.pop(pod.uid, None)
        if stored is None:
            return False
        self.requested = self.requested - stored.requests
        self.non_zero_requested = self.non_zero_requested - stored.non_zero_requests
        for port in stored.host_ports:
            left = self.used_ports.get(port, 0) - 1
            if left > 0:
                self.used_ports[port] = left
            else:
                self.used_ports.pop(port, None)
        self.pods_with_affinity.pop(stored.uid, None)
        return True

    def clone(self) -> NodeInfo:
        copy = NodeInfo(self.node, self.generation)
        copy.pods = dict(self.pods)
        copy.requested = self.requested
        copy.non_zero_requested = self.non_zero_requested
        copy.used_ports = dict(self.used_ports)
        copy.pods_with_affinity = dict(self.pods_with_affinity)
        return copy

    def __repr__(self) -> str:
        return f"NodeInfo({self.name!r}, pods={len(self.pods)}, generation={self.generation})"
