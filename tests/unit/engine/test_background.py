"""Plugins' background work (``Handle.spawn``): runs outside the cycle, a
failure is logged and never raised, shutdown waits up to a deadline and then
cancels, and nothing starts once shutdown began."""

from __future__ import annotations

import asyncio
import logging

import pytest

from scheduler.runtime.background import BackgroundTasks


async def test_work_runs_and_is_forgotten_when_done() -> None:
    tasks = BackgroundTasks()
    done = asyncio.Event()

    async def work() -> None:
        done.set()

    tasks.spawn("w", work())
    assert tasks.in_flight() == 1
    await asyncio.wait_for(done.wait(), 1)
    await asyncio.sleep(0)
    assert tasks.in_flight() == 0


async def test_a_failure_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    tasks = BackgroundTasks()

    async def work() -> None:
        raise RuntimeError("api down")

    with caplog.at_level(logging.ERROR):
        tasks.spawn("preemption:default/p", work())
        assert await tasks.drain(1.0) == 0
    assert "background work preemption:default/p failed" in caplog.text


async def test_drain_cancels_what_outlives_the_deadline_and_refuses_new_work() -> None:
    tasks = BackgroundTasks()
    cancelled = asyncio.Event()

    async def slow() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    tasks.spawn("slow", slow())
    await asyncio.sleep(0)
    assert await tasks.drain(0.01) == 1
    assert cancelled.is_set()

    async def late() -> None:
        raise AssertionError("must not run")

    tasks.spawn("late", late())  # closed, never awaited: no warning either
    assert tasks.in_flight() == 0
