"""Fixtures of the engine tests: virtual time for the running event loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest


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


@pytest.fixture
async def loop_time() -> AsyncIterator[LoopTime]:
    loop = asyncio.get_running_loop()
    virtual = LoopTime(loop)
    setattr(loop, "time", virtual.time)  # noqa: B010 - shadow the method on this loop only
    try:
        yield virtual
    finally:
        delattr(loop, "time")
