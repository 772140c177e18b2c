"""ImageLocality: prefer nodes that already have the pod's images."""

from plugins.image_locality.index import ImageIndex
from plugins.image_locality.plugin import (
    MAX_CONTAINER_THRESHOLD,
    MIN_THRESHOLD,
    NAME,
    ImageLocality,
    calculate_priority,
    new,
)
from scheduler.framework import PluginSpec

SPEC = PluginSpec(name=NAME, plugin_class=ImageLocality, factory=new)

__all__ = [
    "MAX_CONTAINER_THRESHOLD",
    "MIN_THRESHOLD",
    "NAME",
    "SPEC",
    "ImageIndex",
    "ImageLocality",
    "calculate_priority",
]
