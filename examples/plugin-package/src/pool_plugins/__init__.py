"""Two pyscheduler plugins: PoolFilter keeps pods on nodes of allowed pools,
PreferPool scores nodes of one pool highest. The pool is a node label.

Both sign pods (SignPlugin: their results read nothing of the pod, so
results for an unchanged node are reused across cycles), and PoolFilter,
which rejects, names the events that can undo a rejection
(EnqueueExtensions)."""

from __future__ import annotations

from collections.abc import Hashable

from pydantic import BaseModel, ConfigDict, Field

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
    PluginSpec,
    Pod,
    QueueingHint,
    ScorePlugin,
    SignPlugin,
    Status,
)

POOL_LABEL = "example.com/pool"


class PoolFilterArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str = POOL_LABEL
    allowed: tuple[str, ...] = Field(min_length=1)


class PoolFilter(FilterPlugin, EnqueueExtensions, SignPlugin):
    name = "PoolFilter"

    def __init__(self, args: PoolFilterArgs, handle: Handle) -> None:
        self.args = args

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Only a node added or relabelled into an allowed pool can help.
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self.is_schedulable_after_node_change,
            )
        ]

    def is_schedulable_after_node_change(
        self, pod: Pod, old: Node | None, new: Node | None
    ) -> QueueingHint:
        allowed = new is not None and new.labels.get(self.args.label) in self.args.allowed
        return QueueingHint.QUEUE if allowed else QueueingHint.QUEUE_SKIP

    def sign_pod(self, pod: Pod) -> Hashable:
        return ()  # the verdict reads only the node's labels, nothing of the pod

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        pool = node.labels.get(self.args.label) if node is not None else None
        if pool in self.args.allowed:
            return None
        return Status.unresolvable(f"node(s) not in pool {' or '.join(self.args.allowed)}")


class PreferPoolArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str = POOL_LABEL
    preferred: str


class PreferPool(ScorePlugin, SignPlugin):
    name = "PreferPool"

    def __init__(self, args: PreferPoolArgs, handle: Handle) -> None:
        self.args = args

    def sign_pod(self, pod: Pod) -> Hashable:
        return ()  # the score reads only the node's labels

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        node = node_info.node
        preferred = node is not None and node.labels.get(self.args.label) == self.args.preferred
        return (100 if preferred else 0), None


POOL_FILTER = PluginSpec(
    name=PoolFilter.name, plugin_class=PoolFilter, factory=PoolFilter, args_model=PoolFilterArgs
)
PREFER_POOL = PluginSpec(
    name=PreferPool.name, plugin_class=PreferPool, factory=PreferPool, args_model=PreferPoolArgs
)
