"""Assembly: the plugin registry and a configuration's resolved profiles.

``build_registry`` is the in-tree plugins plus those installed under the
``pyscheduler.plugins`` entry-point group; ``resolve`` turns a configuration
into profiles against it, with upstream's default plugin set (gated where
upstream gates it). This is the only module of the engine that names the
in-tree plugins (``plugins.registry``); the composition root, the simulator
and the tools all assemble through it.
"""

from __future__ import annotations

from plugins.registry import DEFAULT_PLUGINS, in_tree_registry
from scheduler.config import (
    PluginRef,
    PointsOf,
    ResolvedProfile,
    SchedulerConfiguration,
    extension_points_of_class,
    resolve_profiles,
)
from scheduler.framework.features import FeatureGates
from scheduler.framework.interfaces import ExtensionPoint
from scheduler.framework.registry import Registry, entry_point_plugins

__all__ = ["build_registry", "resolve"]


def build_registry() -> Registry:
    """In-tree plugins plus those installed under the entry-point group."""
    return in_tree_registry().merged(entry_point_plugins())


def resolve(
    config: SchedulerConfiguration, registry: Registry, gates: FeatureGates | None = None
) -> list[ResolvedProfile]:
    gates = gates or FeatureGates()
    defaults = [
        PluginRef(name, weight)
        for name, weight in DEFAULT_PLUGINS
        if name != "NodeDeclaredFeatures" or gates.enabled("NodeDeclaredFeatures")
    ]
    return resolve_profiles(config, registry, defaults, _points_of(registry))


def _points_of(registry: Registry) -> PointsOf:
    """Extension points by plugin name, reading (and so loading) only the
    plugins a profile names: a lazily registered one no profile enables is
    never imported."""
    known: dict[str, frozenset[ExtensionPoint]] = {}

    def points_of(name: str) -> frozenset[ExtensionPoint]:
        if name not in known:
            known[name] = (
                extension_points_of_class(registry[name].plugin_class)
                if name in registry
                else frozenset()
            )
        return known[name]

    return points_of
