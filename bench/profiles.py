"""The profiles the schedulers under test run, derived from ours (pure).

The headline comparison configures upstream kube-scheduler with exactly the
plugins our default profile runs: ``multiPoint`` with every default disabled
(``*``) and our enabled plugins, in our order, with our Score weights and our
plugin args (validated and defaulted by our loader, written back with the
upstream field names). It is derived from our registry and default plugin
list at run time, so it follows as plugins land.

Invariants:
- A plugin upstream does not ship (an out-of-tree or project-only plugin) is
  left out of upstream's profile and named in ``ours_only``, so the report
  can say the rows differ there;
- args equal to None (a plugin without args) are not written; unset optional
  fields (None) are dropped, so upstream applies its own defaults for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.config import ALL_PLUGINS, API_VERSION, KIND, ResolvedProfile, parse_config
from scheduler.engine.assembly import build_registry, resolve
from scheduler.framework.interfaces import ExtensionPoint

# Upstream's in-tree registry, v1.36 (pkg/scheduler/framework/plugins/registry.go).
UPSTREAM_PLUGINS = frozenset(
    {
        "DynamicResources",
        "ImageLocality",
        "TaintToleration",
        "NodeName",
        "NodePorts",
        "NodeAffinity",
        "NodeDeclaredFeatures",
        "PodTopologySpread",
        "NodeUnschedulable",
        "NodeResourcesFit",
        "NodeResourcesBalancedAllocation",
        "VolumeBinding",
        "VolumeRestrictions",
        "VolumeZone",
        "NodeVolumeLimits",
        "InterPodAffinity",
        "PrioritySort",
        "DefaultBinder",
        "DefaultPreemption",
        "SchedulingGates",
        "GangScheduling",
        "TopologyAware",
        "PodGroupPodsCount",
    }
)


@dataclass(frozen=True)
class PluginChoice:
    """One enabled plugin: its Score weight (0 when it does not score) and its
    args as upstream spells them (None when it takes none)."""

    name: str
    weight: int
    args: Mapping[str, Any] | None


def our_default_profile(scheduler_name: str) -> ResolvedProfile:
    """Our default profile as the scheduler resolves it (registry, defaults, args)."""
    text = (
        f"apiVersion: {API_VERSION}\nkind: {KIND}\nprofiles:\n- schedulerName: {scheduler_name}\n"
    )
    (profile,) = resolve(parse_config(text, "<bench>"), build_registry())
    return profile


def enabled_plugins(profile: ResolvedProfile) -> list[PluginChoice]:
    """Every plugin the profile runs, in its multiPoint order."""
    names = dict.fromkeys(profile.plugin_args)
    for refs in profile.plugins.values():
        names.update(dict.fromkeys(ref.name for ref in refs))
    weights = {ref.name: ref.weight for ref in profile.plugins.get(ExtensionPoint.SCORE, ())}
    return [
        PluginChoice(name, weights.get(name, 0), _upstream_args(profile.plugin_args.get(name)))
        for name in names
    ]


def _upstream_args(args: Any) -> Mapping[str, Any] | None:
    if args is None:
        return None
    dumped: dict[str, Any] = args.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


@dataclass(frozen=True)
class SamePlugins:
    """Upstream's profile document with our plugins, and what it had to leave out."""

    profile: dict[str, Any]
    plugins: tuple[str, ...]
    ours_only: tuple[str, ...]


def same_plugins_profile(ours: ResolvedProfile, scheduler_name: str) -> SamePlugins:
    """An upstream ``KubeSchedulerProfile`` running the plugins ``ours`` runs."""
    chosen = [choice for choice in enabled_plugins(ours) if choice.name in UPSTREAM_PLUGINS]
    left_out = tuple(
        choice.name for choice in enabled_plugins(ours) if choice.name not in UPSTREAM_PLUGINS
    )
    enabled = [
        {"name": choice.name, **({"weight": choice.weight} if choice.weight else {})}
        for choice in chosen
    ]
    profile: dict[str, Any] = {
        "schedulerName": scheduler_name,
        "plugins": {"multiPoint": {"enabled": enabled, "disabled": [{"name": ALL_PLUGINS}]}},
    }
    config = [{"name": choice.name, "args": dict(choice.args)} for choice in chosen if choice.args]
    if config:
        profile["pluginConfig"] = config
    if ours.percentage_of_nodes_to_score is not None:
        profile["percentageOfNodesToScore"] = ours.percentage_of_nodes_to_score
    return SamePlugins(profile, tuple(choice.name for choice in chosen), left_out)
