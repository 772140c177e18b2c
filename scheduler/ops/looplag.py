"""The event loop's lag, the figure that says whether a Python scheduler keeps
up: a tick that should wake every ``tick`` seconds records how late it woke
(``pyscheduler_event_loop_lag_seconds``), and the longest lag of the current
and the previous window (``pyscheduler_event_loop_longest_stall_seconds``), so
a stall stays visible for at least one window after it ended.

``LoopLag.observe`` is the pure part (lag in, metrics out, on the injected
clock's times); ``run`` is the thin loop the composition root owns.
"""

from __future__ import annotations

from typing import Protocol

from scheduler.framework.clock import Clock

TICK_SECONDS = 0.25
WINDOW_SECONDS = 60.0


class LagMetrics(Protocol):
    def loop_lag(self, seconds: float, longest_recent: float) -> None: ...


class LoopLag:
    def __init__(
        self,
        clock: Clock,
        metrics: LagMetrics,
        *,
        tick: float = TICK_SECONDS,
        window: float = WINDOW_SECONDS,
    ) -> None:
        self._clock = clock
        self._metrics = metrics
        self._tick = tick
        self._window = window
        self._window_start = clock.now()
        self._current = 0.0
        self._previous = 0.0

    def observe(self, lag: float, now: float) -> None:
        if now - self._window_start >= self._window:
            windows = int((now - self._window_start) // self._window)
            self._previous = self._current if windows == 1 else 0.0
            self._current = 0.0
            self._window_start += windows * self._window
        self._current = max(self._current, lag)
        self._metrics.loop_lag(lag, max(self._current, self._previous))

    async def run(self) -> None:
        while True:
            started = self._clock.now()
            await self._clock.sleep(self._tick)
            now = self._clock.now()
            self.observe(max(0.0, now - started - self._tick), now)
