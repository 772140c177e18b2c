"""Wait for a condition with a deadline, never for a fixed time.

Tests poll a predicate until it holds; the deadline only bounds a failure, so a
passing test takes as long as the behaviour needs and no longer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


class ConditionTimeout(AssertionError):
    """The condition did not hold before the deadline."""


async def eventually(
    probe: Callable[[], Awaitable[T | None]],
    *,
    timeout: float = 30.0,  # noqa: ASYNC109 - bounds polling; the probe is never cancelled
    interval: float = 0.05,
    what: str = "condition",
) -> T:
    """Await ``probe`` until it returns something truthy, and return that.

    Raises ``ConditionTimeout`` naming ``what`` and the last value seen.
    """
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        last = await probe()
        if last:
            return last
        if time.monotonic() > deadline:
            raise ConditionTimeout(f"{what} did not hold within {timeout}s; last value: {last!r}")
        await asyncio.sleep(interval)
        interval = min(interval * 1.5, 0.5)
