"""NodeUnschedulable: cordoned nodes take only pods that tolerate it."""

from plugins.node_unschedulable.plugin import (
    NAME,
    REASON_UNKNOWN_CONDITION,
    REASON_UNSCHEDULABLE,
    NodeUnschedulable,
    new,
)
from scheduler.framework import PluginSpec

SPEC = PluginSpec(name=NAME, plugin_class=NodeUnschedulable, factory=new)

__all__ = [
    "NAME",
    "REASON_UNKNOWN_CONDITION",
    "REASON_UNSCHEDULABLE",
    "SPEC",
    "NodeUnschedulable",
]
