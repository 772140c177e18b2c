"""NodePorts: a pod's host ports must be free on the node."""

from plugins.node_ports.plugin import NAME, REASON, NodePorts, conflicts, fits_ports, new
from scheduler.framework import PluginSpec

SPEC = PluginSpec(name=NAME, plugin_class=NodePorts, factory=new)

__all__ = ["NAME", "REASON", "SPEC", "NodePorts", "conflicts", "fits_ports"]
