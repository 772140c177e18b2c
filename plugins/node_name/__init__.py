"""NodeName: a pod that names a node fits only that node."""

from plugins.node_name.plugin import NAME, REASON, NodeName, fits, new
from scheduler.framework import PluginSpec

SPEC = PluginSpec(name=NAME, plugin_class=NodeName, factory=new)

__all__ = ["NAME", "REASON", "SPEC", "NodeName", "fits"]
