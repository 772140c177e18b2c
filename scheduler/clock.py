"""Injected time. Logic never calls ``time.time()``; it asks a Clock.

``now()`` is monotonic seconds (for backoff, timeouts, durations); ``wall()``
is Unix time (for API timestamps). Tests use a fake clock they advance by hand.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float: ...

    def wall(self) -> float: ...


class RealClock:
    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()
