"""Drive the engine over an in-memory cluster until nothing is left to do.

``Simulation.run`` builds the same ``Engine`` as the daemon, with a
``MemoryCluster`` as its client, a ``SimClock`` and a seeded RNG; runs its
tasks (informers, events, pod status, queue flushers, scheduling) in one
TaskGroup; and stops once the cluster is quiet.

Quiet means: no watch event undelivered, no status patch pending, no pod in
activeQ, in flight or binding, no plugin background work (preemption's
deletions), and no pod in backoff. While only timers are
left (backoff, a PreBind poll), the simulator jumps the clock to the next
timer instead of waiting. Pods left in the unschedulable pool stay there:
without a cluster change nothing would move them before the 5-minute flush,
which would only repeat the same verdict. ``max_seconds`` of simulated time
bounds a pod that keeps failing with an error.

Pods are listed last, once every other informer has synced: the snapshot
is one point in time, so a pod's PreEnqueue checks (its ResourceClaims,
say) see what the snapshot holds, as they do in a scheduler that has been
running for a while, and the pods enter the queue in input order. (Listed
alongside the rest, a pod whose claims had not arrived yet would be gated
and queued again behind the pods without claims.)

Plugins' start steps run after the informers' sync, as in the daemon (a
failure is a ``SimulationError``); their listeners and workers do not.

The idle check yields to the event loop ``IDLE_ROUNDS`` times in a row with
nothing to do before it trusts the quiet: a write and its watch delivery
are synchronous (``MemoryCluster``), so a few hops cover a handler chain.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from scheduler.config import ResolvedProfile, SchedulerConfiguration
from scheduler.cycle.concurrency import DEFAULT_BINDS
from scheduler.engine.core import Engine
from scheduler.framework.registry import Registry
from scheduler.kube.resources import PODS
from scheduler.ops.diagnostics import AttemptLog
from scheduler.ops.gcpolicy import settle_after_sync
from scheduler.queue import QueueName
from scheduler.simulate.clock import SimClock
from scheduler.simulate.memory import MemoryCluster

IDLE_ROUNDS = 4
DEFAULT_MAX_SECONDS = 3600.0
PROGRESS_EVERY_SECONDS = 2.0
HOSTNAME = "simulator"

Progress = Callable[[str], None]


class SimulationError(Exception):
    """The run cannot go on (a plugin could not start); the message says why."""


@dataclass
class RunStats:
    simulated_seconds: float = 0.0
    cpu_seconds: float = 0.0
    # From the informers' initial sync to quiet: the scheduling alone.
    scheduling_cpu_seconds: float = 0.0
    scheduling_wall_seconds: float = 0.0
    binds: int = 0
    timed_out: bool = False


@dataclass
class Outcome:
    """What a run leaves behind: the cluster's objects and the attempt log."""

    cluster: MemoryCluster
    attempts: AttemptLog
    engine: Engine
    stats: RunStats = field(default_factory=RunStats)


class Simulation:
    def __init__(
        self,
        config: SchedulerConfiguration,
        profiles: list[ResolvedProfile],
        registry: Registry,
        objects: list[dict[str, Any]],
        *,
        seed: int | None = None,
        wall: float | None = None,
        progress: Progress | None = None,
        max_seconds: float = DEFAULT_MAX_SECONDS,
    ) -> None:
        self.clock = SimClock(wall if wall is not None else time.time())
        self.cluster = MemoryCluster(objects, self.clock.wall)
        self.engine = Engine(
            config,
            profiles,
            registry,
            self.cluster,
            clock=self.clock,
            hostname=HOSTNAME,
            metrics_registry=CollectorRegistry(),
            binds=DEFAULT_BINDS,
            rng=random.Random(seed),
        )
        self._progress = progress
        self._max_seconds = max_seconds

    async def run(self) -> Outcome:
        engine = self.engine
        stats = RunStats()
        cpu_started = time.process_time()
        async with asyncio.TaskGroup() as group:
            self.cluster.hold(PODS)
            informers = group.create_task(engine.informer_factory.run(), name="informers")
            events = group.create_task(engine.event_sink.run(), name="events")
            status = group.create_task(engine.status_writer.run(), name="pod-status")
            await self._all_but_pods_synced()
            self.cluster.release(PODS)
            await engine.informer_factory.wait_synced()
            await self._start_plugins()
            settle_after_sync()
            synced_cpu, synced_wall = time.process_time(), time.perf_counter()
            flushers = group.create_task(engine.queue.run(), name="queue-flushers")
            scheduling = group.create_task(engine.scheduler.run(), name="scheduling")
            stats.timed_out = not await self._until_quiet()
            stats.scheduling_cpu_seconds = time.process_time() - synced_cpu
            stats.scheduling_wall_seconds = time.perf_counter() - synced_wall
            engine.scheduler.stop_popping()
            engine.queue.close()
            await engine.scheduler.drain(0)
            await engine.background.drain(0)
            engine.status_writer.close()
            await status
            await engine.event_sink.drain()
            for task in (informers, events, flushers, scheduling):
                task.cancel()
            for task in (informers, events, flushers, scheduling):
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        stats.cpu_seconds = time.process_time() - cpu_started
        stats.simulated_seconds = self.clock.now()
        stats.binds = sum(1 for e in self.cluster.events if e.get("reason") == "Scheduled")
        return Outcome(self.cluster, engine.attempt_log, engine, stats)

    async def _all_but_pods_synced(self) -> None:
        """Until every informer but the pods' (including any requested
        meanwhile) has synced."""
        factory = self.engine.informer_factory
        while True:
            others = [i for i in factory.informers() if i.resource != PODS]
            if all(i.has_synced for i in others):
                return
            for informer in others:
                await informer.wait_synced()

    async def _start_plugins(self) -> None:
        """The plugins' start steps (a configuration to wait for), as the
        daemon runs them after the sync; their waits run on simulated time.
        Listeners and workers are not run: nothing calls in from outside."""
        start = asyncio.ensure_future(self.engine.plugin_services.start())
        while not start.done():
            await self._idle()
            if start.done():
                break
            deadline = self.clock.next_deadline()
            if deadline is None or deadline > self._max_seconds:
                start.cancel()
                raise SimulationError("a plugin's start step never finished")
            self.clock.advance_to_next()
        try:
            start.result()
        except RuntimeError as error:
            raise SimulationError(str(error)) from None

    def _busy(self) -> bool:
        engine = self.engine
        return bool(
            self.cluster.pending_deliveries()
            or engine.status_writer.pending()
            or engine.queue.in_flight_pods()
            or engine.scheduler.binding_in_flight()
            or engine.background.in_flight()
        )

    async def _idle(self) -> None:
        """Yield until IDLE_ROUNDS passes in a row found nothing moving."""
        quiet = 0
        last_writes = -1
        next_report = time.perf_counter() + PROGRESS_EVERY_SECONDS
        while quiet < IDLE_ROUNDS:
            await asyncio.sleep(0)
            writes = self.cluster.writes
            if self._busy() or writes != last_writes:
                quiet = 0
                last_writes = writes
            else:
                quiet += 1
            if self._progress is not None and time.perf_counter() >= next_report:
                next_report = time.perf_counter() + PROGRESS_EVERY_SECONDS
                self._report(self._progress)

    def _report(self, progress: Progress) -> None:
        queued = self.engine.queue.pending_pods()
        progress(
            f"simulate: {self.cluster.writes} writes, "
            f"{len(queued[QueueName.ACTIVE])} active, {len(queued[QueueName.BACKOFF])} backoff, "
            f"{len(queued[QueueName.UNSCHEDULABLE])} unschedulable, "
            f"t={self.clock.now():.0f}s simulated"
        )

    async def _until_quiet(self) -> bool:
        """True once quiet; False if ``max_seconds`` of simulated time ran out."""
        while True:
            await self._idle()
            queued = self.engine.queue.pending_pods()
            if queued[QueueName.ACTIVE]:
                continue  # the loop has not popped yet
            waiting = bool(
                queued[QueueName.BACKOFF]
                or self.engine.scheduler.binding_in_flight()
                or self.engine.background.in_flight()
            )
            if not waiting:
                return True
            deadline = self.clock.next_deadline()
            if deadline is None or deadline > self._max_seconds:
                return False
            self.clock.advance_to_next()
