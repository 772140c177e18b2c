"""The runtime's per-point plugin lists are filled once, in configured order,
and a plugin enabled at a point it does not implement is refused up front."""

from __future__ import annotations

import pytest

from scheduler.framework import ExtensionPoint
from scheduler.runtime.points import PluginSet
from tests.unit.engine.plugins import BindStub, FilterStub, ReserveStub


def test_each_point_gets_its_plugins_in_order() -> None:
    first, second, reserve, bind = FilterStub("A"), FilterStub("B"), ReserveStub("R"), BindStub("X")
    plugins = PluginSet.from_points(
        {
            ExtensionPoint.FILTER: [first, second],
            ExtensionPoint.RESERVE: [reserve],
            ExtensionPoint.BIND: [bind],
        }
    )
    assert plugins.filter == [first, second]
    assert (plugins.reserve, plugins.bind, plugins.score, plugins.queue_sort) == (
        [reserve],
        [bind],
        [],
        None,
    )


def test_a_plugin_at_a_point_it_does_not_implement_is_refused() -> None:
    with pytest.raises(TypeError, match="'A' is enabled at Score but is not a ScorePlugin"):
        PluginSet.from_points({ExtensionPoint.SCORE: [FilterStub("A")]})
