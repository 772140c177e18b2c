"""The in-tree plugins, listed explicitly (no import-time registration).

``in_tree_registry()`` builds a fresh Registry of every in-tree plugin;
``DEFAULT_PLUGINS`` is the default profile's multiPoint list in upstream order
(``pkg/scheduler/apis/config/v1/default_plugins.go`` of v1.36, with the
feature-gated additions of its defaults: NodeDeclaredFeatures appended, as
its gate is on by default since 1.36) restricted to the plugins that exist
here, with their score weights (0 = unset, which the framework reads as 1 for
Score plugins and ignores for the others).
"""

from __future__ import annotations

from typing import Any

from plugins import (
    default_binder,
    default_preemption,
    dynamicresources,
    image_locality,
    inter_pod_affinity,
    node_affinity,
    node_declared_features,
    node_name,
    node_ports,
    node_resources_balanced_allocation,
    node_resources_fit,
    node_unschedulable,
    node_volume_limits,
    pod_topology_spread,
    priority_sort,
    scheduling_gates,
    taint_toleration,
    volume_binding,
    volume_restrictions,
    volume_zone,
)
from scheduler.framework import PluginSpec, Registry

# Not in the default profile, and the costliest import of all (~0.1 s):
# loaded only when a profile names it.
AUTOSCALE_ENFORCER = "AutoscaleEnforcer"

DEFAULT_PLUGINS: tuple[tuple[str, int], ...] = (
    (scheduling_gates.NAME, 0),
    (priority_sort.NAME, 0),
    (node_unschedulable.NAME, 0),
    (node_name.NAME, 0),
    (taint_toleration.NAME, 3),
    (node_affinity.NAME, 2),
    (node_ports.NAME, 0),
    (node_resources_fit.NAME, 1),
    (volume_restrictions.NAME, 0),
    (node_volume_limits.NAME, 0),
    (volume_binding.NAME, 0),
    (volume_zone.NAME, 0),
    (pod_topology_spread.NAME, 2),
    (inter_pod_affinity.NAME, 2),
    # upstream inserts DynamicResources right before DefaultPreemption, weight 2
    (dynamicresources.NAME, 2),
    (default_preemption.NAME, 0),
    (node_resources_balanced_allocation.NAME, 1),
    (image_locality.NAME, 1),
    (default_binder.NAME, 0),
    (node_declared_features.NAME, 0),
)


def in_tree_registry() -> Registry:
    registry = Registry(
        [
            scheduling_gates.SPEC,
            priority_sort.SPEC,
            node_unschedulable.SPEC,
            node_name.SPEC,
            taint_toleration.SPEC,
            node_affinity.SPEC,
            node_ports.SPEC,
            node_resources_fit.SPEC,
            volume_restrictions.SPEC,
            node_volume_limits.SPEC,
            volume_binding.SPEC,
            volume_zone.SPEC,
            pod_topology_spread.SPEC,
            inter_pod_affinity.SPEC,
            dynamicresources.SPEC,
            node_resources_balanced_allocation.SPEC,
            image_locality.SPEC,
            default_preemption.SPEC,
            default_binder.SPEC,
            node_declared_features.SPEC,
        ]
    )
    registry.register_lazy(AUTOSCALE_ENFORCER, _autoscale_enforcer)
    return registry


def _autoscale_enforcer() -> PluginSpec[Any]:
    from plugins import autoscale_enforcer  # noqa: PLC0415 - lazy: see AUTOSCALE_ENFORCER

    return autoscale_enforcer.SPEC
