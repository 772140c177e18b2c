"""Fixtures of the engine tests: virtual time for the running event loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.support.clock import LoopTime


@pytest.fixture
async def loop_time() -> AsyncIterator[LoopTime]:
    loop = asyncio.get_running_loop()
    virtual = LoopTime(loop)
    setattr(loop, "time", virtual.time)  # noqa: B010 - shadow the method on this loop only
    try:
        yield virtual
    finally:
        delattr(loop, "time")
