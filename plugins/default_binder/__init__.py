"""DefaultBinder: binds a pod by POSTing its ``binding`` subresource."""

from plugins.default_binder.plugin import NAME, REASON_PREFIX, DefaultBinder, new
from scheduler.framework import PluginSpec

SPEC = PluginSpec(name=NAME, plugin_class=DefaultBinder, factory=new)

__all__ = ["NAME", "REASON_PREFIX", "SPEC", "DefaultBinder"]
