"""PrioritySort: the default QueueSort plugin (higher priority first, then FIFO)."""

from plugins.priority_sort.plugin import NAME, PrioritySort, new
from scheduler.framework import PluginSpec

SPEC = PluginSpec(name=NAME, plugin_class=PrioritySort, factory=new)

__all__ = ["NAME", "SPEC", "PrioritySort"]
