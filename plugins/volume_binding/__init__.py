"""VolumeBinding: claims bound, matched or provisioned for the chosen node."""

from plugins.volume_binding.args import VolumeBindingArgs
from plugins.volume_binding.binder import (
    REASON_BIND_CONFLICT,
    REASON_NODE_CONFLICT,
    REASON_NOT_ENOUGH_SPACE,
    REASON_PV_NOT_EXIST,
    REASON_UNBOUND_IMMEDIATE,
)
from plugins.volume_binding.plugin import NAME, VolumeBinding, new
from scheduler.framework import PluginSpec

SPEC = PluginSpec(name=NAME, plugin_class=VolumeBinding, factory=new, args_model=VolumeBindingArgs)

__all__ = [
    "NAME",
    "REASON_BIND_CONFLICT",
    "REASON_NODE_CONFLICT",
    "REASON_NOT_ENOUGH_SPACE",
    "REASON_PV_NOT_EXIST",
    "REASON_UNBOUND_IMMEDIATE",
    "SPEC",
    "VolumeBinding",
    "VolumeBindingArgs",
]
