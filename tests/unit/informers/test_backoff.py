"""Exponential backoff: doubling, the cap, reset and jitter bounds."""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.informers.backoff import Backoff


def test_doubles_up_to_the_cap_and_resets() -> None:
    backoff = Backoff(initial=0.8, cap=30, factor=2, jitter=0)
    assert [backoff.next() for _ in range(8)] == pytest.approx(
        [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30, 30]
    )
    backoff.reset()
    assert backoff.next() == pytest.approx(0.8)


def test_jitter_stays_within_bounds() -> None:
    backoff = Backoff(initial=1, cap=30, factor=2, jitter=1, rng=random.Random(7))
    delays = [backoff.next() for _ in range(10)]
    bases = [1, 2, 4, 8, 16, 30, 30, 30, 30, 30]
    assert all(base <= d <= min(30, 2 * base) for d, base in zip(delays, bases, strict=True))


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"initial": 0}, id="zero initial"),
        pytest.param({"initial": 5, "cap": 1}, id="cap below initial"),
        pytest.param({"factor": 0.5}, id="shrinking factor"),
    ],
)
def test_rejects_nonsense(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="backoff"):
        Backoff(**kwargs)
