"""VolumeRestrictions: disks that can't be shared, and ReadWriteOncePod claims."""

from plugins.volume_restrictions.plugin import (
    NAME,
    REASON_DISK_CONFLICT,
    REASON_READ_WRITE_ONCE_POD_CONFLICT,
    VolumeRestrictions,
    new,
)
from scheduler.framework import PluginSpec

SPEC = PluginSpec(name=NAME, plugin_class=VolumeRestrictions, factory=new)

__all__ = [
    "NAME",
    "REASON_DISK_CONFLICT",
    "REASON_READ_WRITE_ONCE_POD_CONFLICT",
    "SPEC",
    "VolumeRestrictions",
]
