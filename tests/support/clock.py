"""The fake clocks: ``FakeClock`` (the injected ``Clock``) moves when the test
advances it or when the code under test sleeps on it; ``LoopTime`` is virtual
time for a running event loop (the engine tests' ``loop_time`` fixture)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class FakeClock:
    """``now()`` (monotonic) and ``wall()`` (Unix time) advance together.

    ``sleep(seconds)`` records the delay, runs the hooks registered with
    ``on_sleep`` (before time moves: they see the state the sleeper left),
    advances the clock, fires the actions scheduled with ``at`` whose time has
    come, and yields to the event loop once. Nothing really waits, so a loop
    that sleeps forever must be stopped by a hook or an action.
    """

    def __init__(self, now: float = 1000.0, wall: float = 1_700_000_000.0) -> None:
        self._now = now
        self._wall = wall
        self._start = now
        self.sleeps: list[float] = []
        self._hooks: list[Callable[[float], object]] = []
        self._actions: list[tuple[float, Callable[[], object]]] = []

    def now(self) -> float:
        return self._now

    def wall(self) -> float:
        return self._wall

    @property
    def elapsed(self) -> float:
        """Monotonic seconds since the clock was made."""
        return self._now - self._start

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock does not go back")
        self._now += seconds
        self._wall += seconds
        while self._actions and self._actions[0][0] <= self.elapsed:
            _, action = self._actions.pop(0)
            action()

    def set(self, now: float) -> None:
        """Jump the monotonic time forward to ``now``."""
        self.advance(now - self._now)

    def on_sleep(self, hook: Callable[[float], object]) -> None:
        """Call ``hook(seconds)`` at every sleep, before the clock moves."""
        self._hooks.append(hook)

    def at(self, elapsed: float, action: Callable[[], object]) -> None:
        """Run ``action`` once the clock has moved ``elapsed`` seconds from its start."""
        self._actions.append((elapsed, action))
        self._actions.sort(key=lambda item: item[0])

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        for hook in list(self._hooks):
            hook(seconds)
        self.advance(max(0.0, seconds))
        await asyncio.sleep(0)


class LoopTime:
    """The running loop's clock, moved only by ``advance``.

    Timers (``call_later``, ``asyncio.sleep``) fire when virtual time passes
    them, so a 15-minute Permit timeout takes no real time. Only await things
    that virtual time or other tasks resolve: a timer far in the virtual
    future with nothing else to do would block the loop for real.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.now = loop.time()

    def time(self) -> float:
        return self.now

    async def settle(self) -> None:
        """Let every ready callback and woken task run."""
        for _ in range(10):
            await asyncio.sleep(0)

    async def advance(self, seconds: float) -> None:
        self.now += seconds
        await self.settle()
