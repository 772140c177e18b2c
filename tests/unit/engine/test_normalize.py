"""DefaultNormalizeScore on plain values, and the framework's use of a
plugin's values-only normalization instead of NodeScore objects."""

from __future__ import annotations

import pytest

from plugins.taint_toleration import plugin as taint
from scheduler.framework import CycleState, NodeScore, Status, default_normalize, parse_pod
from tests.support.builders import make_pod


@pytest.mark.parametrize(
    ("values", "reverse", "expected"),
    [
        pytest.param([0, 0, 0], False, [0, 0, 0], id="all zero stays zero"),
        pytest.param([0, 0, 0], True, [100, 100, 100], id="all zero reversed is the maximum"),
        pytest.param([1, 2, 4], False, [25, 50, 100], id="scaled by the highest"),
        pytest.param([1, 2, 4], True, [75, 50, 0], id="reversed"),
        pytest.param([1, 3], False, [33, 100], id="Go integer division truncates"),
        pytest.param([], True, [], id="no nodes"),
    ],
)
def test_default_normalize(values: list[int], reverse: bool, expected: list[int]) -> None:
    assert default_normalize(values, 100, reverse=reverse) == expected


def test_taint_toleration_values_path_equals_its_node_score_path() -> None:

    plugin = taint.TaintToleration()
    values = [0, 2, 1, 2]
    scores = [NodeScore(f"n{i}", v) for i, v in enumerate(values)]
    status = plugin.normalize_score(CycleState(), parse_pod(make_pod("p").obj()), scores)
    assert status is None or status == Status.success()
    assert plugin.normalize_values(list(values)) == [s.score for s in scores] == [100, 0, 50, 0]
