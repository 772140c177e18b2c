"""The in-tree plugins, listed explicitly (no import-time registration).

``in_tree_registry()`` builds a fresh Registry of every in-tree plugin;
``DEFAULT_PLUGINS`` is the default profile's multiPoint list in upstream order
(``pkg/scheduler/apis/config/v1/default_plugins.go``) restricted to the plugins
that exist here, with their score weights (0 = unset, which the framework reads
as 1 for Score plugins and ignores for the others).
"""

from __future__ import annotations

from plugins import (
    default_binder,
    dynamicresources,
    node_name,
    node_resources_fit,
    node_unschedulable,
    priority_sort,
    scheduling_gates,
    taint_toleration,
)
from scheduler.framework import Registry

DEFAULT_PLUGINS: tuple[tuple[str, int], ...] = (
    (scheduling_gates.NAME, 0),
    (priority_sort.NAME, 0),
    (node_unschedulable.NAME, 0),
    (node_name.NAME, 0),
    (taint_toleration.NAME, 3),
    (node_resources_fit.NAME, 1),
    (dynamicresources.NAME, 0),
    (default_binder.NAME, 0),
)


def in_tree_registry() -> Registry:
    return Registry(
        [
            scheduling_gates.SPEC,
            priority_sort.SPEC,
            node_unschedulable.SPEC,
            node_name.SPEC,
            taint_toleration.SPEC,
            node_resources_fit.SPEC,
            dynamicresources.SPEC,
            default_binder.SPEC,
        ]
    )
