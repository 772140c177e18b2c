"""NodeUnschedulable: Filter for ``node.spec.unschedulable`` (cordoned nodes).

A cordoned node is rejected (UnschedulableAndUnresolvable) unless the pod
tolerates the taint ``node.kubernetes.io/unschedulable:NoSchedule``. A pod
waits for a node to be added schedulable, to be uncordoned, or for itself to
gain that toleration (tolerations can be added to a pod, never removed).
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
    Node,
    NodeInfo,
    Pod,
    QueueingHint,
    SignPlugin,
    Status,
    Taint,
)

NAME = "NodeUnschedulable"
REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"
REASON_UNSCHEDULABLE = "node(s) were unschedulable"

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
EFFECT_NO_SCHEDULE = "NoSchedule"
_UNSCHEDULABLE_TAINT = Taint(key=TAINT_NODE_UNSCHEDULABLE, value="", effect=EFFECT_NO_SCHEDULE)


class NodeUnschedulable(FilterPlugin, SignPlugin, EnqueueExtensions):
    name = NAME

    def sign_pod(self, pod: Pod) -> Hashable:
        """Node-local: the result for a node depends only on this part of the pod."""
        return pod.tolerations

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_TOLERATION),
                self.is_schedulable_after_pod_toleration_change,
            ),
        ]

    def is_schedulable_after_node_change(
        self, pod: Pod, old: Node | None, new: Node | None
    ) -> QueueingHint:
        if new is None or new.unschedulable:
            return QueueingHint.QUEUE_SKIP
        # Added schedulable, or uncordoned.
        if old is None or old.unschedulable:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pod_toleration_change(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        if new is not None and new.uid == pod.uid and tolerates_unschedulable(new):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status.unresolvable(REASON_UNKNOWN_CONDITION)
        if node.unschedulable and not tolerates_unschedulable(pod):
            return Status.unresolvable(REASON_UNSCHEDULABLE)
        return None


def tolerates_unschedulable(pod: Pod) -> bool:
    return any(t.tolerates(_UNSCHEDULABLE_TAINT) for t in pod.tolerations)


def new(args: object, handle: Handle) -> NodeUnschedulable:
    return NodeUnschedulable()
