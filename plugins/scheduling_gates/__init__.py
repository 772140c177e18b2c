"""SchedulingGates: keeps a pod out of activeQ while it has scheduling gates."""

from plugins.scheduling_gates.plugin import NAME, SchedulingGates, new
from scheduler.framework import PluginSpec

SPEC = PluginSpec(name=NAME, plugin_class=SchedulingGates, factory=new)

__all__ = ["NAME", "SPEC", "SchedulingGates"]
