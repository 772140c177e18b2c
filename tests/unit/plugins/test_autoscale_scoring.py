"""AutoscaleEnforcer Score as Neon's ``Score`` (v0.41.0) computes it: per
resource, the fill before the pod and the size relative to the largest node."""

from __future__ import annotations

import pytest

from plugins.autoscale_enforcer import scoring
from plugins.autoscale_enforcer.state import ZERO, Amounts
from tests.unit.plugins.autoscale_support import amounts, make_config

POD = amounts(1, 1)


@pytest.mark.parametrize(
    ("before", "total", "largest", "expected"),
    [
        pytest.param(ZERO, amounts(48, 48), amounts(48, 48), 50, id="empty largest node: y0"),
        pytest.param(
            ZERO,
            amounts(48, 16),
            amounts(48, 48),
            16,
            id="Score: memory a third of the largest node's, cpu the largest: min(50, 16)",
        ),
        pytest.param(
            amounts(19.2, 0),
            amounts(24, 48),
            amounts(48, 48),
            50,
            id="Score: cpu at the peak before the pod on a half-size node: min(50, 50)",
        ),
        pytest.param(
            amounts(12, 12),
            amounts(28, 48),
            amounts(48, 48),
            44,
            id="Score: 28 of 48 CPUs, 12/28 filled, memory 12/48 filled: min(44, 65)",
        ),
        pytest.param(amounts(48, 0), amounts(48, 48), amounts(48, 48), 0, id="over budget: 0"),
    ],
)
def test_target_fill_per_resource_as_neon(
    before: Amounts, total: Amounts, largest: Amounts, expected: int
) -> None:
    config = make_config()  # scorePeak 0.8, minUsageScore 0.5, maxUsageScore 0
    after = before + POD
    assert scoring.score(before, after, total, largest, config) == expected
