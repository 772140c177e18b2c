"""Hosting plugin listeners: start, gate and stop every listener plugins asked for.

``ListenerHost`` owns the plugin listeners of one daemon: each thread listener
(``scheduler.services.thread.ListenerThread``) and each process listener
(``scheduler.services.process.ProcessListener``) on its own port. It asks the
composition root's gate, per request for threads and every ``GATE_SECONDS``
for processes (they cannot ask per request), whether a listener serves now.

Invariants: ``start`` starts every listener or none (a failure stops what was
started); ``stop`` is idempotent and joins every thread and child process;
``port(name)`` answers only for a started listener.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from scheduler.services.collector import Listener
from scheduler.services.process import ProcessListener
from scheduler.services.thread import ListenerThread

__all__ = ["GATE_SECONDS", "GateExpiry", "ListenerGate", "ListenerHost"]

GATE_SECONDS = 0.02  # how soon a process listener follows the gate

# Why a plugin listener refuses now (None: serve). Given the listener's
# ``leader_only``; the composition root knows sync, start and leadership.
ListenerGate = Callable[[bool], str | None]
# Until when (``time.monotonic`` seconds) a process listener may serve on its
# last gate without hearing again, given its ``leader_only`` (None: no limit).
GateExpiry = Callable[[bool], float | None]


class ListenerHost:
    def __init__(
        self,
        host: str,
        listeners: Sequence[Listener] = (),
        process_listeners: Sequence[ProcessListener] = (),
        *,
        gate: ListenerGate | None = None,
        gate_expiry: GateExpiry | None = None,
    ) -> None:
        self._host = host
        self._listeners = tuple(listeners)
        self._process_listeners = tuple(process_listeners)
        self._gate = gate or (lambda _leader_only: None)
        self._gate_expiry = gate_expiry or (lambda _leader_only: None)
        self._threads: list[ListenerThread] = []
        self._started_processes: list[ProcessListener] = []
        self._gate_timer: asyncio.TimerHandle | None = None

    async def start(self) -> None:
        try:
            for listener in self._listeners:
                await self._start_thread(listener)
            for process in self._process_listeners:
                self._update_gate(process)
                self._started_processes.append(process)
                await process.start(self._host)
        except BaseException:
            await self.stop()
            raise
        if self._process_listeners:
            self._push_gates()

    async def stop(self) -> None:
        """Stop the child processes, then join the threads; idempotent."""
        if self._gate_timer is not None:
            self._gate_timer.cancel()
            self._gate_timer = None
        processes, self._started_processes = self._started_processes, []
        for process in processes:
            await process.stop()
        threads, self._threads = self._threads, []
        for thread in threads:
            await thread.stop()

    def port(self, name: str) -> int:
        """The port a plugin listener actually listens on (useful with port 0)."""
        for thread in self._threads:
            if thread.name == name:
                return thread.port
        for process in self._started_processes:
            if process.name == name:
                return process.port
        raise RuntimeError(f"plugin listener {name!r} is not started")

    def _push_gates(self) -> None:
        for process in self._started_processes:
            self._update_gate(process)
        loop = asyncio.get_running_loop()
        self._gate_timer = loop.call_later(GATE_SECONDS, self._push_gates)

    def _update_gate(self, process: ProcessListener) -> None:
        leader_only = process.leader_only
        process.update_gate(self._gate(leader_only), self._gate_expiry(leader_only))

    async def _start_thread(self, listener: Listener) -> None:
        thread = ListenerThread(
            listener.name,
            listener.handler,
            host=self._host,
            port=listener.port,
            max_body_bytes=listener.max_body_bytes,
            gate=lambda: self._gate(listener.leader_only),
        )
        await thread.start()
        self._threads.append(thread)
