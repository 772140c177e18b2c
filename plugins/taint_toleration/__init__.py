"""TaintToleration: hard taints filter nodes, PreferNoSchedule taints score them."""

from plugins.taint_toleration.plugin import (
    NAME,
    REASON_UNTOLERATED,
    TaintToleration,
    default_normalize_score,
    find_untolerated_taint,
    new,
)
from scheduler.framework import PluginSpec

SPEC = PluginSpec(name=NAME, plugin_class=TaintToleration, factory=new)

__all__ = [
    "NAME",
    "REASON_UNTOLERATED",
    "SPEC",
    "TaintToleration",
    "default_normalize_score",
    "find_untolerated_taint",
]
