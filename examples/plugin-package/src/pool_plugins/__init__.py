"""Two pyscheduler plugins: PoolFilter keeps pods on nodes of allowed pools,
PreferPool scores nodes of one pool highest. The pool is a node label."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from scheduler.framework import (
    CycleState,
    FilterPlugin,
    Handle,
    NodeInfo,
    PluginSpec,
    Pod,
    ScorePlugin,
    Status,
)

POOL_LABEL = "example.com/pool"


class PoolFilterArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str = POOL_LABEL
    allowed: tuple[str, ...] = Field(min_length=1)


class PoolFilter(FilterPlugin):
    name = "PoolFilter"

    def __init__(self, args: PoolFilterArgs, handle: Handle) -> None:
        self.args = args

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


class PreferPool(ScorePlugin):
    name = "PreferPool"

    def __init__(self, args: PreferPoolArgs, handle: Handle) -> None:
        self.args = args

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
