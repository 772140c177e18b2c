"""Plugins' work outside the scheduling cycle, both kinds, with one owner.

- One-shot work (``Handle.spawn``: API writes such as preemption's victim
  deletions): ``spawn`` runs it as a named task; a failure is logged, never
  raised into the scheduler.
- Long-running workers (``PluginServices.run``: the AutoscaleEnforcer's
  migration worker): ``run_workers`` runs each as a task ``plugin:<name>``
  for as long as it is itself running; the composition root runs it as one
  task of its TaskGroup from when scheduling starts. A worker that raises
  makes ``run_workers`` raise (the daemon stops with that error); cancelling
  ``run_workers`` cancels every worker and waits for them.

The composition root owns the one ``BackgroundTasks`` and stops it at
shutdown in this order, after the binding cycles drained: ``drain`` waits for
one-shot work up to a deadline, then cancels the rest (and refuses new
work); then, with the informers, the ``run_workers`` task is cancelled.

Invariant: every task started here is in ``_tasks`` or ``_workers`` until it
finishes, so shutdown can always reach it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

log = logging.getLogger(__name__)


class BackgroundTasks:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()
        self._workers: set[asyncio.Task[None]] = set()
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

    async def run_workers(
        self, workers: Sequence[tuple[str, Callable[[], Coroutine[Any, Any, None]]]]
    ) -> None:
        """Run each worker as task ``plugin:<name>`` until cancelled; the first
        worker to raise is re-raised here (after the others are cancelled)."""
        loop = asyncio.get_running_loop()
        for name, work in workers:
            self._workers.add(loop.create_task(work(), name=f"plugin:{name}"))
        try:
            running = set(self._workers)
            while running:
                done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    if not task.cancelled() and task.exception() is not None:
                        raise RuntimeError(f"{task.get_name()} failed") from task.exception()
                    log.info("plugin worker %s returned", task.get_name())
            await asyncio.Event().wait()  # no worker left: wait to be cancelled
        finally:
            for task in self._workers:
                task.cancel()
            if self._workers:
                await asyncio.wait(self._workers)
            self._workers.clear()

    def workers_running(self) -> int:
        return sum(1 for task in self._workers if not task.done())
