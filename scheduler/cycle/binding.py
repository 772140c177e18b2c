"""Binding cycles: one task per assumed pod, run beside the scheduling loop.

WaitOnPermit, PreBindPreFlight (and the nominatedNodeName expectation),
PreBind, Bind, PostBind. Every task ends in exactly one of: bound (``_bound``),
failed (``_binding_failed``: unreserve, forget, requeue), or rolled back by its
done-callback when it was cancelled or crashed (``_roll_back``), so no pod
stays assumed but unbound.

Back-pressure: ``room()`` (awaited by the loop before it pops) waits while
``limit`` cycles are *writing*: started and not waiting at Permit, and not
in a PreBind that has run longer than ``PRE_BIND_GRACE`` (a PreBind that
long waits on others, a volume or a driver, not on its own write). So
neither a Permit wait nor a long PreBind wait stalls scheduling for more
than the grace. When the API server is slower than the loop, pods wait in
activeQ instead of assumed in a binding backlog: the assumed-but-unbound
set (and DRA's in-flight claims) stays bounded, and an attempt's duration
is the pod's own cycle and writes, not a queue behind other pods'.

The limit is ``--max-concurrent-binds`` (16), or, with
``--adaptive-concurrent-binds``, adapts (``scheduler.cycle.concurrency``,
which says why it is off by default): each bound cycle's
writing time (the clock's time while it counted as writing, so without
its Permit wait) and the number writing when it last started to count are
one sample; the limit rises while that latency holds and falls when more
concurrency only adds queueing, between a floor and ``--max-concurrent-
binds``. Failed
and cancelled cycles, and those whose PreBind outlived the grace (their
time was a volume's or a driver's, not a write's), are no sample. A rise
wakes a waiting ``room()``; a fall cancels nothing, the next pops wait.
The Bind requests in flight stay bounded by the ceiling.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Mapping

from scheduler.cycle.concurrency import BindConcurrency
from scheduler.cycle.contracts import (
    AttemptMetrics,
    AttemptResult,
    Binding,
    SchedulingLoop,
    SchedulingQueueLike,
    single_node_fit_error,
)
from scheduler.cycle.reporting import (
    ACTION_BINDING,
    EVENT_SCHEDULED,
    TYPE_NORMAL,
    StatusWriter,
    scheduled_note,
)
from scheduler.framework.clock import Clock
from scheduler.framework.events import ASSIGNED_POD_DELETE
from scheduler.framework.handle import EventRecorder
from scheduler.framework.objects import Pod
from scheduler.framework.status import Status
from scheduler.framework.types import FitError

log = logging.getLogger(__name__)

# A PreBind running longer than this no longer holds the loop back (room()).
PRE_BIND_GRACE = 1.0


@dataclasses.dataclass(slots=True)
class _WriteTime:
    """How long one binding cycle has counted as writing: the limit's sample."""

    since: float | None = None  # when it last started to count; None while it does not
    seconds: float = 0.0  # counted before ``since``
    writing: int = 0  # cycles writing, itself included, when it last started to count
    sampled: bool = True  # False once its PreBind outlived the grace


class BindingCycles:
    """Starts and tracks binding cycles; each ends by telling ``loop``."""

    def __init__(
        self,
        *,
        queue: SchedulingQueueLike,
        recorders: Mapping[str, EventRecorder],
        status_writer: StatusWriter,
        clock: Clock,
        metrics: AttemptMetrics,
        loop: SchedulingLoop,
        binds: BindConcurrency,
    ) -> None:
        self._queue = queue
        self._recorders = recorders
        self._status = status_writer
        self._clock = clock
        self._metrics = metrics
        self._loop = loop
        self._tasks: dict[asyncio.Task[None], Binding] = {}
        # Bounds concurrent Bind calls only, at the ceiling (0: unbounded, as
        # upstream); a cycle waiting at Permit or in PreBind holds nothing.
        self._bind_requests = asyncio.Semaphore(binds.ceiling) if binds.ceiling > 0 else None
        self._fenced = False
        # Pod key -> node of each Bind call under way (past the last checks).
        self._sending: dict[str, str] = {}
        self._limit = binds.limiter()  # None: unbounded
        self._writing: set[str] = set()  # assumed pod UIDs that room() counts
        self._write_times: dict[str, _WriteTime] = {}  # by assumed pod UID, per task
        metrics.bind_concurrency_limit(self.limit())
        self._room = asyncio.Event()
        self._room.set()
        self._stopped = False

    def fence(self) -> None:
        """Leadership is gone: from now on no binding cycle sends PreBind or
        Bind; those in flight are cancelled (each rolls back), new ones are
        rolled back at once. Synchronous and idempotent."""
        if self._fenced:
            return
        self._fenced = True
        if self._tasks:
            log.warning("fenced: cancelling %d binding cycles", len(self._tasks))
        for task in self._tasks:
            task.cancel()
        self._room.set()

    @property
    def fenced(self) -> bool:
        return self._fenced

    def start(self, binding: Binding) -> None:
        if self._fenced:
            self._roll_back(binding, requeue=False)
            return
        task = asyncio.get_running_loop().create_task(
            self._binding_cycle(binding), name=f"bind {binding.assumed.key}"
        )
        self._tasks[task] = binding
        self._write_times[binding.assumed.uid] = _WriteTime()
        self._count(binding.assumed.uid, True)
        self._metrics.goroutines("binding", 1)
        task.add_done_callback(self._binding_done)

    async def drain(self, deadline_seconds: float) -> int:
        """Wait for binding cycles up to the deadline, then cancel the rest
        (each rolls back). Returns how many had to be cancelled."""
        tasks = set(self._tasks)
        if not tasks:
            return 0
        _, pending = await asyncio.wait(tasks, timeout=deadline_seconds)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)
        return len(pending)

    def in_flight(self) -> int:
        return len(self._tasks)

    def writing(self) -> int:
        """Cycles that hold the loop back (see the module docstring)."""
        return len(self._writing)

    def limit(self) -> int:
        """How many cycles may write at once now (0: unbounded)."""
        return 0 if self._limit is None else self._limit.limit

    async def room(self) -> None:
        """Until fewer than ``limit()`` cycles are writing (at once when
        unbounded, fenced or stopped)."""
        while not self._has_room():
            self._room.clear()
            await self._room.wait()

    def stop(self) -> None:
        """The loop is stopping: ``room()`` no longer waits."""
        self._stopped = True
        self._room.set()

    def _has_room(self) -> bool:
        return (
            self._limit is None
            or self._fenced
            or self._stopped
            or self.writing() < self._limit.limit
        )

    def _count(self, uid: str, writing: bool) -> None:
        times = self._write_times.get(uid)
        if writing:
            self._writing.add(uid)
            if times is not None:
                times.since, times.writing = self._clock.now(), len(self._writing)
        else:
            self._writing.discard(uid)
            if times is not None and times.since is not None:
                times.seconds += self._clock.now() - times.since
                times.since = None
            if self._has_room():
                self._room.set()

    def _sample(self, uid: str) -> None:
        """A bound cycle's writing time goes to the limit (module docstring)."""
        times = self._write_times.get(uid)
        if self._limit is None or times is None or not times.sampled:
            return
        seconds = times.seconds
        if times.since is not None:
            seconds += self._clock.now() - times.since
        before = self._limit.limit
        after = self._limit.observe(seconds, times.writing)
        if after == before:
            return
        self._metrics.bind_concurrency_limit(after)
        if after > before and self._has_room():
            self._room.set()

    def binds_sending(self) -> dict[str, str]:
        """Pod key -> node of each Bind call under way: past the fence and
        node checks, so a deletion of that node seen now cannot stop it."""
        return dict(self._sending)

    def _binding_done(self, task: asyncio.Task[None]) -> None:
        binding = self._tasks.pop(task)
        self._count(binding.assumed.uid, False)
        self._write_times.pop(binding.assumed.uid, None)
        self._metrics.goroutines("binding", -1)
        self._loop.binding_done()
        if not binding.finished:
            self._roll_back(binding, requeue=not task.cancelled())

    async def _binding_cycle(self, binding: Binding) -> None:
        """Runs the binding steps; a cancellation or an unexpected exception is
        rolled back by ``_binding_done`` (the binding is not ``finished``)."""
        try:
            await self._bind_steps(binding)
        except Exception:
            log.exception("binding cycle for %s crashed", binding.assumed.key)

    async def _bind_steps(self, binding: Binding) -> None:
        framework, state, assumed, host = (
            binding.framework,
            binding.state,
            binding.assumed,
            binding.host,
        )
        pod = binding.pinfo.pod
        pre_binding = False  # some PreBind plugin has work (its pre-flight said so)
        if framework.pre_bind or framework.is_waiting(assumed.uid):
            # NominatedNodeNameForExpectation (on since 1.35): when a PreBind
            # plugin will work or the pod waits at Permit, tell the world
            # (autoscalers, other schedulers) where the pod is going.
            flight = framework.run_pre_bind_pre_flights(state, assumed, host)
            if flight.is_error():
                self._binding_failed(binding, None, flight)
                return
            pre_binding = bool(framework.pre_bind) and not flight.is_skip()
            if flight.is_success() or framework.is_waiting(assumed.uid):
                self._nominate(pod, host)
        status = await self._permit(binding)
        if status is not None:
            self._binding_failed(binding, single_node_fit_error(pod, host, status), status)
            return
        self._queue.done(pod.uid)
        self._check_fence()
        status = await self._pre_bind(binding, pre_binding)
        if status is not None:
            self._binding_failed(binding, single_node_fit_error(pod, host, status), status)
            return
        # No status patch of this pod may land after the bind: a pending one
        # is dropped, one in flight is waited for.
        await self._status.settle(pod.namespace, pod.name)
        if self._bind_requests is None:
            bound = await self._bind(binding)
        else:
            async with self._bind_requests:
                bound = await self._bind(binding)
        if not bound.is_success():
            if bound.is_skip():
                bound = Status.as_error("no bind plugin bound the pod")
            self._binding_failed(binding, None, bound)
            return
        self._bound(binding)

    async def _permit(self, binding: Binding) -> Status | None:
        """WaitOnPermit; while the pod waits there it does not count as writing."""
        framework, uid = binding.framework, binding.assumed.uid
        if not framework.is_waiting(uid):
            return await framework.wait_on_permit(binding.assumed)
        self._count(uid, False)
        try:
            return await framework.wait_on_permit(binding.assumed)
        finally:
            self._count(uid, True)

    async def _pre_bind(self, binding: Binding, working: bool) -> Status | None:
        """PreBind; past ``PRE_BIND_GRACE`` the cycle stops holding the loop back."""
        run = binding.framework.run_pre_bind(binding.state, binding.assumed, binding.host)
        if not working:
            return await run
        timer = asyncio.ensure_future(self._release_after(binding.assumed.uid))
        try:
            return await run
        finally:
            timer.cancel()

    async def _release_after(self, uid: str) -> None:
        await self._clock.sleep(PRE_BIND_GRACE)
        times = self._write_times.get(uid)
        if times is not None:
            times.sampled = False
        self._count(uid, False)

    async def _bind(self, binding: Binding) -> Status:
        """The Bind call, unless leadership is gone or the node was deleted
        while the cycle waited (Permit, PreBind, a bind slot): a pod bound to
        a deleted node can never run and the pod GC deletes it, so it goes
        back to the queue instead (upstream binds it anyway)."""
        self._check_fence()
        if not self._loop.node_exists(binding.host):
            return Status.as_error(f"node {binding.host!r} was deleted before the bind")
        key = binding.assumed.key
        self._sending[key] = binding.host
        try:
            return await binding.framework.run_bind(binding.state, binding.assumed, binding.host)
        finally:
            del self._sending[key]

    def _check_fence(self) -> None:
        """Right before a write only the leader may send (PreBind, Bind)."""
        if self._fenced:
            raise asyncio.CancelledError("fenced: leadership lost")

    def _nominate(self, pod: Pod, host: str) -> None:
        if pod.nominated_node_name != host:
            self._status.submit(
                pod.namespace, pod.name, {"status": {"nominatedNodeName": host}}, uid=pod.uid
            )

    def _roll_back(self, binding: Binding, *, requeue: bool) -> None:
        """Undo an unfinished binding cycle (shutdown or a crash)."""
        binding.finished = True
        framework, state, assumed = binding.framework, binding.state, binding.assumed
        framework.reject_waiting(assumed.uid, "binding cycle aborted")
        framework.run_unreserve(state, assumed, binding.host)
        self._loop.forget(assumed)
        if requeue:
            status = Status.as_error("binding cycle failed unexpectedly")
            self._loop.handle_failure(
                framework,
                binding.pinfo,
                None,
                status,
                cycle=binding.cycle,
                started=binding.started,
            )
        else:
            self._queue.done(assumed.uid)

    def _bound(self, binding: Binding) -> None:
        binding.finished = True
        self._sample(binding.assumed.uid)
        framework, pinfo, host = binding.framework, binding.pinfo, binding.host
        pod = pinfo.pod
        now = self._clock.now()
        self._metrics.attempt(
            AttemptResult.SCHEDULED, framework.profile_name, now - binding.started
        )
        self._metrics.pod_attempts(pinfo.attempts)
        if pinfo.was_flushed_from_unschedulable:
            self._metrics.scheduled_after_flush()
        if pinfo.initial_attempt_timestamp is not None:
            self._metrics.sli(pinfo.attempts, now - pinfo.initial_attempt_timestamp)
        recorder = self._recorders.get(framework.profile_name)
        if recorder is not None:
            recorder.event(
                pod.raw,
                TYPE_NORMAL,
                EVENT_SCHEDULED,
                ACTION_BINDING,
                scheduled_note(pod.namespace, pod.name, host),
            )
        framework.run_post_bind(binding.state, binding.assumed, host)
        self._loop.activate(binding.state)

    def _binding_failed(self, binding: Binding, fit_error: FitError | None, status: Status) -> None:
        binding.finished = True
        framework, state, assumed, host = (
            binding.framework,
            binding.state,
            binding.assumed,
            binding.host,
        )
        framework.run_unreserve(state, assumed, host)
        forgotten = self._loop.forget(assumed)
        rejected = status.is_rejected()
        if forgotten and not rejected:
            # The assumed pod's resources are free again: that may help others.
            self._queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, assumed, None)
        self._loop.handle_failure(
            framework,
            binding.pinfo,
            fit_error,
            status,
            cycle=binding.cycle,
            started=binding.started,
        )
        if forgotten and rejected:
            # As upstream: after requeueing the rejected pod itself, so that the
            # event is not replayed to it as an in-flight event.
            uid = assumed.uid
            self._queue.move_all_to_active_or_backoff(
                ASSIGNED_POD_DELETE, assumed, None, lambda pod: pod.uid != uid
            )
