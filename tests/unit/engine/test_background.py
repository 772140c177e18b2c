"""Plugins' background work. One-shot (``Handle.spawn``): runs outside the
cycle, a failure is logged and never raised, shutdown waits up to a deadline
and then cancels, and nothing starts once shutdown began. Workers
(``PluginServices.run``): named ``plugin:<name>``, stopped together when
``run_workers`` is cancelled; a failing one is raised."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

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


async def test_workers_run_named_until_cancelled_then_all_stop() -> None:
    tasks = BackgroundTasks()
    started: list[str] = []
    stopped: list[str] = []

    def worker(label: str) -> Callable[[], Coroutine[Any, Any, None]]:
        async def run() -> None:
            task = asyncio.current_task()
            assert task is not None
            started.append(task.get_name())
            try:
                await asyncio.Event().wait()
            finally:
                stopped.append(label)

        return run

    async def returns() -> None:
        return None

    running = asyncio.create_task(
        tasks.run_workers([("a", worker("a")), ("b", worker("b")), ("done", returns)])
    )
    for _ in range(10):
        await asyncio.sleep(0)
    assert sorted(started) == ["plugin:a", "plugin:b"]
    assert tasks.workers_running() == 2
    assert not running.done()  # a worker that returns stops nothing
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert sorted(stopped) == ["a", "b"]
    assert tasks.workers_running() == 0


async def test_a_failing_worker_is_raised_and_the_others_are_cancelled() -> None:
    tasks = BackgroundTasks()
    cancelled = asyncio.Event()

    async def fails() -> None:
        raise ValueError("bad config")

    async def waits() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(RuntimeError, match="plugin:broken failed") as raised:
        await asyncio.wait_for(tasks.run_workers([("broken", fails), ("ok", waits)]), 5)
    assert isinstance(raised.value.__cause__, ValueError)
    assert cancelled.is_set()
