"""The async side: ``pop`` waits for work, ``run`` drives the flushes."""

from __future__ import annotations

import asyncio
from typing import Any

from scheduler.framework.clock import RealClock
from scheduler.queue import QueueName
from tests.support.clock import FakeClock
from tests.unit.queue.fakes import NODE_ADD, fail, make_queue, on, pod, pop, rejected, where

DEADLINE = 5.0


async def _blocked(task: asyncio.Task[Any]) -> None:
    """Let the task run until it blocks."""
    for _ in range(3):
        await asyncio.sleep(0)
    assert not task.done()


async def test_pop_waits_for_an_add() -> None:
    queue = make_queue()
    task = asyncio.create_task(queue.pop())
    await _blocked(task)
    queue.add(pod("p"))
    pinfo = await asyncio.wait_for(task, DEADLINE)
    assert pinfo is not None
    assert pinfo.pod.name == "p"


async def test_pop_wakes_for_a_pod_entering_backoff() -> None:
    queue = make_queue(events={"Fit": [on(NODE_ADD)]})
    queue.add(pod("p"))
    pinfo = pop(queue)
    task = asyncio.create_task(queue.pop())
    await _blocked(task)
    queue.move_all_to_active_or_backoff(NODE_ADD, None, None)
    fail(queue, pinfo, "Fit")
    assert await asyncio.wait_for(task, DEADLINE) is pinfo


async def test_pop_returns_none_once_closed() -> None:
    queue = make_queue()
    task = asyncio.create_task(queue.pop())
    await _blocked(task)
    queue.close()
    assert await asyncio.wait_for(task, DEADLINE) is None
    queue.add(pod("p"))
    assert await asyncio.wait_for(queue.pop(), DEADLINE) is None


async def test_run_flushes_backoff_on_whole_seconds() -> None:
    clock = FakeClock(now=1000.3)
    queue = make_queue(clock, events={"Fit": [on(NODE_ADD)]})
    queue.add(pod("p"))
    pinfo = pop(queue)
    queue.move_all_to_active_or_backoff(NODE_ADD, None, None)
    fail(queue, pinfo, "Fit")  # expires 1001, done waiting in the window at 1002
    seen: list[tuple[float, str | None]] = []

    def look(_seconds: float) -> None:
        seen.append((clock.now(), where(queue, "p")))
        if where(queue, "p") == QueueName.ACTIVE:
            queue.close()

    clock.on_sleep(look)
    await asyncio.wait_for(queue.run(), DEADLINE)
    assert seen == [
        (1000.3, QueueName.BACKOFF),
        (1001.0, QueueName.BACKOFF),
        (1002.0, QueueName.ACTIVE),
    ]


async def test_run_flushes_the_pool_after_five_minutes() -> None:
    clock = FakeClock()
    queue = make_queue(clock, events={"Fit": []})
    rejected(queue, "p", "Fit")

    moved_at: list[float] = []

    def look(_seconds: float) -> None:
        if where(queue, "p") != QueueName.UNSCHEDULABLE or clock.now() > 2000:
            moved_at.append(clock.now())
            queue.close()

    clock.on_sleep(look)
    await asyncio.wait_for(queue.run(), DEADLINE)
    assert where(queue, "p") == QueueName.ACTIVE
    assert moved_at == [1330.0], "by the first 30-second flush after the 5 minutes"


async def test_run_stops_promptly_on_close() -> None:
    queue = make_queue(RealClock())
    task = asyncio.create_task(queue.run())
    await _blocked(task)
    queue.close()
    await asyncio.wait_for(task, DEADLINE)
