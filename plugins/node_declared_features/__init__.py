"""NodeDeclaredFeatures: a pod that needs node features goes to nodes declaring them."""

from plugins.node_declared_features.plugin import (
    NAME,
    REASON,
    NodeDeclaredFeatures,
    new,
    required_features,
)
from scheduler.framework import PluginSpec

SPEC = PluginSpec(name=NAME, plugin_class=NodeDeclaredFeatures, factory=new)

__all__ = ["NAME", "REASON", "SPEC", "NodeDeclaredFeatures", "required_features"]
