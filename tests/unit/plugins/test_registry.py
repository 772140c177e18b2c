"""The in-tree registry and the default plugin order."""

from __future__ import annotations

from typing import cast

import pytest

from plugins.registry import DEFAULT_PLUGINS, in_tree_registry
from scheduler.framework import (
    BindPlugin,
    FilterPlugin,
    Handle,
    Plugin,
    PluginSpec,
    PreEnqueuePlugin,
    QueueSortPlugin,
    ScorePlugin,
)

EXPECTED_DEFAULTS = (
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeResourcesFit", 1),
    ("DynamicResources", 0),
    ("DefaultBinder", 0),
)


def test_default_plugins_in_upstream_order() -> None:
    assert DEFAULT_PLUGINS == EXPECTED_DEFAULTS


def test_every_default_is_registered() -> None:
    registry = in_tree_registry()
    assert {name for name, _ in DEFAULT_PLUGINS} <= set(registry)


def test_each_call_builds_a_fresh_registry() -> None:
    assert in_tree_registry() is not in_tree_registry()


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        pytest.param("SchedulingGates", PreEnqueuePlugin, id="SchedulingGates"),
        pytest.param("PrioritySort", QueueSortPlugin, id="PrioritySort"),
        pytest.param("NodeUnschedulable", FilterPlugin, id="NodeUnschedulable"),
        pytest.param("NodeName", FilterPlugin, id="NodeName"),
        pytest.param("TaintToleration", ScorePlugin, id="TaintToleration"),
        pytest.param("NodeResourcesFit", ScorePlugin, id="NodeResourcesFit"),
        pytest.param("DefaultBinder", BindPlugin, id="DefaultBinder"),
    ],
)
def test_factory_builds_the_named_plugin(name: str, kind: type[Plugin]) -> None:
    spec: PluginSpec = in_tree_registry()[name]
    args = spec.args_model.model_validate({}) if spec.args_model else None
    plugin = spec.factory(args, cast(Handle, object()))
    assert isinstance(plugin, kind)
    assert plugin.name == spec.name == name
