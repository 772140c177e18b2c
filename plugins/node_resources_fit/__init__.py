"""NodeResourcesFit: does the node have room for the pod, and how full would it be."""

from plugins.node_resources_fit.args import (
    NodeResourcesFitArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    ScoringStrategyType,
    UtilizationShapePoint,
)
from plugins.node_resources_fit.fit import (
    REASON_TOO_MANY_PODS,
    InsufficientResource,
    fits,
    fits_request,
    insufficient_reason,
)
from plugins.node_resources_fit.plugin import NAME, NodeResourcesFit, new
from scheduler.framework import PluginSpec

SPEC = PluginSpec(
    name=NAME, plugin_class=NodeResourcesFit, factory=new, args_model=NodeResourcesFitArgs
)

__all__ = [
    "NAME",
    "REASON_TOO_MANY_PODS",
    "SPEC",
    "InsufficientResource",
    "NodeResourcesFit",
    "NodeResourcesFitArgs",
    "RequestedToCapacityRatioParam",
    "ResourceSpec",
    "ScoringStrategy",
    "ScoringStrategyType",
    "UtilizationShapePoint",
    "fits",
    "fits_request",
    "insufficient_reason",
]
