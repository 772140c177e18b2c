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


class FakeInformers:
    def on_change(self, resource: str, handler: object) -> None:
        pass


class FakeHandle:
    """Just what the factories use at construction."""

    informers = FakeInformers()


EXPECTED_DEFAULTS = (
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 2),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
    # Upstream appends it when its feature gate is on (beta, on by default in 1.36).
    ("NodeDeclaredFeatures", 0),
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
        pytest.param("NodeAffinity", FilterPlugin, id="NodeAffinity"),
        pytest.param("NodePorts", FilterPlugin, id="NodePorts"),
        pytest.param(
            "NodeResourcesBalancedAllocation", ScorePlugin, id="NodeResourcesBalancedAllocation"
        ),
        pytest.param("ImageLocality", ScorePlugin, id="ImageLocality"),
        pytest.param("NodeDeclaredFeatures", FilterPlugin, id="NodeDeclaredFeatures"),
        pytest.param("DefaultBinder", BindPlugin, id="DefaultBinder"),
    ],
)
def test_factory_builds_the_named_plugin(name: str, kind: type[Plugin]) -> None:
    spec: PluginSpec = in_tree_registry()[name]
    args = spec.args_model.model_validate({}) if spec.args_model else None
    plugin = spec.factory(args, cast(Handle, FakeHandle()))
    assert isinstance(plugin, kind)
    assert plugin.name == spec.name == name
