"""NodeVolumeLimits: CSI attach limits per node, from CSINode allocatable counts."""

from plugins.node_volume_limits.plugin import (
    NAME,
    REASON_MAX_VOLUME_COUNT_EXCEEDED,
    NodeVolumeLimits,
    new,
)
from scheduler.framework import PluginSpec

SPEC = PluginSpec(name=NAME, plugin_class=NodeVolumeLimits, factory=new)

__all__ = ["NAME", "REASON_MAX_VOLUME_COUNT_EXCEEDED", "SPEC", "NodeVolumeLimits"]
