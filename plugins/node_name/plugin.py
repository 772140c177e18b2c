"""NodeName: Filter rejecting every node but the one in ``spec.nodeName``.

The rejection is UnschedulableAndUnresolvable (preemption cannot rename a
node). Only a node appearing or changing can help, hence Node Add|Update.
"""

from __future__ import annotations

from collections.abc import Hashable

from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    EnqueueExtensions,
    EventResource,
    FilterPlugin,
    Handle,
    NodeInfo,
    Pod,
    SignPlugin,
    Status,
)

NAME = "NodeName"
REASON = "node(s) didn't match the requested node name"


class NodeName(FilterPlugin, SignPlugin, EnqueueExtensions):
    name = NAME

    def sign_pod(self, pod: Pod) -> Hashable:
        """Node-local: the result for a node depends only on this part of the pod."""
        return pod.node_name

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE)
            )
        ]

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if node_info.node is None:
            return Status.as_error("node not found")
        if not fits(pod, node_info):
            return Status.unresolvable(REASON)
        return None


def fits(pod: Pod, node_info: NodeInfo) -> bool:
    return not pod.node_name or pod.node_name == node_info.name


def new(args: object, handle: Handle) -> NodeName:
    return NodeName()
