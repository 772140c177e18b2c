"""NodeAffinity: nodeSelector and node affinity filter nodes; preferred terms score them."""

from plugins.node_affinity.args import NodeAffinityArgs
from plugins.node_affinity.plugin import (
    NAME,
    REASON_CONFLICT,
    REASON_ENFORCED,
    REASON_POD,
    NodeAffinity,
    new,
)
from scheduler.framework import PluginSpec

SPEC = PluginSpec(name=NAME, plugin_class=NodeAffinity, factory=new, args_model=NodeAffinityArgs)

__all__ = [
    "NAME",
    "REASON_CONFLICT",
    "REASON_ENFORCED",
    "REASON_POD",
    "SPEC",
    "NodeAffinity",
    "NodeAffinityArgs",
]
