"""NodeResourcesBalancedAllocation: prefer nodes whose resource use stays balanced."""

from plugins.node_resources_balanced_allocation.args import NodeResourcesBalancedAllocationArgs
from plugins.node_resources_balanced_allocation.plugin import (
    NAME,
    BalancedAllocation,
    balanced_resource_score,
    balanced_score,
    new,
)
from scheduler.framework import PluginSpec

SPEC = PluginSpec(
    name=NAME,
    plugin_class=BalancedAllocation,
    factory=new,
    args_model=NodeResourcesBalancedAllocationArgs,
)

__all__ = [
    "NAME",
    "SPEC",
    "BalancedAllocation",
    "NodeResourcesBalancedAllocationArgs",
    "balanced_resource_score",
    "balanced_score",
]
