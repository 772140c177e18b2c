"""NodePorts: PreFilter and Filter over host ports.

Upstream ``pkg/scheduler/framework/plugins/nodeports``. A pod's host ports
are those of its app containers and of its restartable (sidecar) init
containers (``Pod.host_ports``, parsed once, with the host IP defaulted to
``0.0.0.0`` and the protocol to TCP). A wanted ``(ip, protocol, port)``
conflicts with a port in use on the node when protocol and port are equal
and either the IPs are equal or one of them is the wildcard ``0.0.0.0``.
A conflict is Unschedulable (evicting the pod holding the port helps):
``node(s) didn't have free ports for the requested pod ports``.

PreFilter skips pods without host ports. Queueing: a node added, or an
assigned (or nominated) pod deleted that held a port this pod wants.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence

from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    EnqueueExtensions,
    EventResource,
    FilterPlugin,
    Handle,
    HostPort,
    NodeInfo,
    Pod,
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
    SignPlugin,
    Status,
)

NAME = "NodePorts"
REASON = "node(s) didn't have free ports for the requested pod ports"
WILDCARD_IP = "0.0.0.0"


class NodePorts(PreFilterPlugin, FilterPlugin, SignPlugin, EnqueueExtensions):
    name = NAME

    def sign_pod(self, pod: Pod) -> Hashable:
        """Node-local: the result for a node depends only on the pod's host ports."""
        return pod.host_ports

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # Container ports are immutable: pod updates never free a port.
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE),
                self.is_schedulable_after_pod_deleted,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
        ]

    def is_schedulable_after_pod_deleted(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        if old is None:
            return QueueingHint.QUEUE
        if not old.node_name and not old.nominated_node_name:
            return QueueingHint.QUEUE_SKIP  # it held no node's ports
        if not old.host_ports:
            return QueueingHint.QUEUE_SKIP
        if fits_ports(pod.host_ports, dict.fromkeys(old.host_ports, 1)):
            return QueueingHint.QUEUE_SKIP  # no port in common
        return QueueingHint.QUEUE

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.host_ports:
            return None, Status.skip()
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not node_info.used_ports or fits_ports(pod.host_ports, node_info.used_ports):
            return None
        return Status.unschedulable(REASON)


def conflicts(wanted: HostPort, used: Mapping[HostPort, int]) -> bool:
    """Upstream ``HostPortInfo.CheckConflict``."""
    if wanted.port <= 0:
        return False
    if wanted.ip == WILDCARD_IP:
        return any(port.port == wanted.port and port.protocol == wanted.protocol for port in used)
    return wanted in used or HostPort(WILDCARD_IP, wanted.protocol, wanted.port) in used


def fits_ports(wanted: Iterable[HostPort], used: Mapping[HostPort, int]) -> bool:
    """No wanted port conflicts with the ports in use."""
    return not any(conflicts(port, used) for port in wanted)


def new(args: object, handle: Handle) -> NodePorts:
    return NodePorts()
