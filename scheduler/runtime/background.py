"""Short-lived background work that plugins start outside the scheduling
cycle (API writes such as preemption's victim deletions).

The composition root owns the one ``BackgroundTasks`` and stops it at
shutdown after the binding cycles drained: ``drain`` waits for the tasks up
to a deadline, then cancels the rest. A task's failure is logged, never
raised into the scheduler.

Invariant: every task started here is in ``_tasks`` until it finishes, so
shutdown can always reach it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)


class BackgroundTasks:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    def spawn(self, name: str, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` as a named task; refused (closed) after ``drain`` began."""
        if self._closed:
            work.close()
            log.warning("background work %s refused: shutting down", name)
            return
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background work %s failed", task.get_name(), exc_info=task.exception())

    def in_flight(self) -> int:
        return len(self._tasks)

    async def drain(self, deadline_seconds: float) -> int:
        """Wait for running work up to the deadline, then cancel the rest.
        Returns how many were cancelled."""
        self._closed = True
        if not self._tasks:
            return 0
        _, pending = await asyncio.wait(set(self._tasks), timeout=deadline_seconds)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)
        return len(pending)
