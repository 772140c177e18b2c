"""``scheduler.testing``, the public helpers for plugin authors, on in-tree
plugins: args validated as the configuration loader does, Filter with its
PreFilter, Score with its normalization."""

from __future__ import annotations

from typing import Any

import pytest

from plugins.node_resources_fit import SPEC as FIT
from scheduler.config import ConfigError
from scheduler.framework import FilterPlugin, Plugin, PluginSpec
from scheduler.testing import build_plugin, make_node, make_pod, run_filter, run_score


@pytest.mark.parametrize(
    ("cpu", "fits"), [pytest.param("1", True, id="fits"), pytest.param("8", False, id="too big")]
)
def test_run_filter_runs_prefilter_then_filter(cpu: str, fits: bool) -> None:
    plugin = build_plugin(FIT)
    status = run_filter(plugin, make_pod("p", requests={"cpu": cpu}), make_node("n", cpu="4"))

    assert (status is None or status.is_success()) == fits
    if not fits:
        assert status is not None
        assert "Insufficient cpu" in status.reasons


def test_run_score_scores_every_node() -> None:
    plugin = build_plugin(FIT, {"scoringStrategy": {"type": "MostAllocated"}})
    busy = make_node("busy", cpu="4", running=[make_pod("x", requests={"cpu": "3"})])
    idle = make_node("idle", cpu="4")

    scores = run_score(plugin, make_pod("p", requests={"cpu": "1"}), [busy, idle])

    assert scores["busy"] > scores["idle"]


def test_build_plugin_names_the_bad_field() -> None:
    with pytest.raises(ConfigError, match=r"pluginConfig\.NodeResourcesFit\.args\.bogus"):
        build_plugin(FIT, {"bogus": 1})


def test_a_factory_that_needs_a_handle_is_told_to_pass_one() -> None:
    def factory(_args: object, handle: Any) -> Plugin:
        _ = handle.clock
        raise AssertionError("unreachable")

    spec = PluginSpec(name="NeedsHandle", plugin_class=FilterPlugin, factory=factory)

    with pytest.raises(AttributeError, match="pass handle="):
        build_plugin(spec)
