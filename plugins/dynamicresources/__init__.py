"""DynamicResources: Dynamic Resource Allocation (structured parameters), as upstream 1.36."""

from plugins.dynamicresources.args import DynamicResourcesArgs
from plugins.dynamicresources.cycledata import NAME
from plugins.dynamicresources.plugin import (
    REASON_CANNOT_ALLOCATE,
    REASON_NOT_AVAILABLE,
    DynamicResources,
    new,
)
from scheduler.framework import PluginSpec

SPEC = PluginSpec(
    name=NAME, plugin_class=DynamicResources, factory=new, args_model=DynamicResourcesArgs
)

__all__ = [
    "NAME",
    "REASON_CANNOT_ALLOCATE",
    "REASON_NOT_AVAILABLE",
    "SPEC",
    "DynamicResources",
    "DynamicResourcesArgs",
]
