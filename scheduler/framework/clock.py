"""Injected time. Logic never calls ``time.time()`` or ``asyncio.sleep``; it
asks a Clock.

``now()`` is monotonic seconds (for backoff, timeouts, durations); ``wall()``
is Unix time (for API timestamps); ``sleep()`` waits on the same time (0
just yields to the event loop). Tests use one fake clock that moves when they
advance it or when the code under test sleeps.

The only other time source allowed is ``time.perf_counter`` as a stopwatch for
durations that go to metrics and nothing else (plugin and event-handler
latencies): it never decides anything.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float: ...

    def wall(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
