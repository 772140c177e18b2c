"""PodTopologySpread: hard and soft topology spread constraints, with defaults."""

from plugins.pod_topology_spread.args import (
    DefaultConstraint,
    DefaultingType,
    NodeInclusionPolicy,
    PodTopologySpreadArgs,
)
from plugins.pod_topology_spread.plugin import (
    NAME,
    REASON_CONSTRAINTS_NOT_MATCH,
    REASON_NODE_LABEL_NOT_MATCH,
    PodTopologySpread,
    new,
)
from scheduler.framework import PluginSpec

SPEC = PluginSpec(
    name=NAME, plugin_class=PodTopologySpread, factory=new, args_model=PodTopologySpreadArgs
)

__all__ = [
    "NAME",
    "REASON_CONSTRAINTS_NOT_MATCH",
    "REASON_NODE_LABEL_NOT_MATCH",
    "SPEC",
    "DefaultConstraint",
    "DefaultingType",
    "NodeInclusionPolicy",
    "PodTopologySpread",
    "PodTopologySpreadArgs",
]
