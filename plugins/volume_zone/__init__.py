"""VolumeZone: bound volumes' zone and region labels against the node's."""

from plugins.volume_zone.plugin import NAME, REASON_CONFLICT, VolumeZone, new
from scheduler.framework import PluginSpec

SPEC = PluginSpec(name=NAME, plugin_class=VolumeZone, factory=new)

__all__ = ["NAME", "REASON_CONFLICT", "SPEC", "VolumeZone"]
