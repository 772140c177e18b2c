"""InterPodAffinity: required and preferred pod affinity and anti-affinity."""

from plugins.inter_pod_affinity.args import InterPodAffinityArgs
from plugins.inter_pod_affinity.plugin import (
    NAME,
    REASON_AFFINITY_NOT_MATCH,
    REASON_ANTI_AFFINITY_NOT_MATCH,
    REASON_EXISTING_ANTI_AFFINITY_NOT_MATCH,
    InterPodAffinity,
    new,
)
from scheduler.framework import PluginSpec

SPEC = PluginSpec(
    name=NAME, plugin_class=InterPodAffinity, factory=new, args_model=InterPodAffinityArgs
)

__all__ = [
    "NAME",
    "REASON_AFFINITY_NOT_MATCH",
    "REASON_ANTI_AFFINITY_NOT_MATCH",
    "REASON_EXISTING_ANTI_AFFINITY_NOT_MATCH",
    "SPEC",
    "InterPodAffinity",
    "InterPodAffinityArgs",
]
