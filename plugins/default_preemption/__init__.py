"""DefaultPreemption: evict lower-priority pods to make room (PostFilter)."""

from plugins.default_preemption.args import DefaultPreemptionArgs
from plugins.default_preemption.plugin import NAME, DefaultPreemption, new
from scheduler.framework import PluginSpec

SPEC = PluginSpec(
    name=NAME, plugin_class=DefaultPreemption, factory=new, args_model=DefaultPreemptionArgs
)

__all__ = ["NAME", "SPEC", "DefaultPreemption", "DefaultPreemptionArgs"]
