"""Creating pods at a steady rate (the churn mode's measured pods).

``pods_due`` is the schedule, pure: pod ``i`` (from 0) is due ``i / rate``
seconds after the start, so the first is due at once and ``total`` are due
after ``(total - 1) / rate`` seconds. ``create_steadily`` follows it on the
harness's monotonic clock, with at most ``creators`` POSTs in flight: a slow
answer delays no later pod unless every creator is waiting, and then the
pods that fell due are sent as soon as creators free up (the schedule is
caught up, never shifted).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Iterable
from typing import Protocol

from bench.workload import Obj


class PodCreator(Protocol):
    """``bench.apiclient.Api``'s create."""

    async def create(self, path: str, body: Obj) -> None: ...


def pods_due(elapsed: float, rate: float, total: int) -> int:
    """How many of ``total`` pods are due ``elapsed`` seconds after the start."""
    if elapsed < 0:
        return 0
    return min(total, math.floor(elapsed * rate + 1e-9) + 1)


def next_due(created: int, rate: float) -> float:
    """Seconds after the start when pod number ``created`` (from 0) is due."""
    return created / rate


async def create_steadily(
    api: PodCreator, path: str, bodies: Iterable[Obj], total: int, *, rate: float, creators: int
) -> None:
    """POST ``total`` bodies on the schedule, ``creators`` at most at a time."""
    pending = iter(bodies)
    slots = asyncio.Semaphore(creators)
    began = time.monotonic()

    async def create(body: Obj) -> None:
        try:
            await api.create(path, body)
        finally:
            slots.release()

    created = 0
    async with asyncio.TaskGroup() as group:
        while created < total:
            await asyncio.sleep(max(began + next_due(created, rate) - time.monotonic(), 0.0))
            due = pods_due(time.monotonic() - began, rate, total)
            while created < due:
                await slots.acquire()
                group.create_task(create(next(pending)), name=f"create-{created}")
                created += 1
