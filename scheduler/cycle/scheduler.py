"""The scheduling loop: one pod at a time through the scheduling cycle, then
an asynchronous binding cycle per pod.

``schedule_one`` is synchronous from pop to Permit (no await: the snapshot
and CycleState are private to the cycle, the cache and queue are touched only
between awaits). Binding runs as a task per pod, unbounded as upstream's binding
goroutines; ``binds`` (``scheduler.cycle.concurrency``) bounds only the cycles
writing at once, with a limit that follows the bind latency, so pods waiting
at Permit or in PreBind never hold up the loop. ``fence``
(leadership lost) stops every PreBind and Bind write at once.

Invariants:
- Every popped pod ends in exactly one of: bound (and confirmed later by the
  informer), requeued through ``add_unschedulable_if_not_present``, or dropped
  because it is gone, deleting, already assumed or no longer ours.
- An assumed pod is forgotten (and its plugins unreserved) on every failure
  after assume, so no node keeps phantom requests.
- A cycle that raises is failed as an error like any other (counted, requeued
  with backoff, event and condition): never silently.
- ``shutdown`` stops popping, then lets binding tasks finish until a
  deadline; those still running are cancelled and roll back (unreserve,
  forget), so no pod stays assumed but unbound.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping

from scheduler.cache.cache import Cache, CacheError
from scheduler.cache.snapshot import Snapshot
from scheduler.cycle.algorithm import Algorithm, ScheduleResult, SchedulingError
from scheduler.cycle.binding import BindingCycles
from scheduler.cycle.concurrency import DEFAULT_BINDS, BindConcurrency
from scheduler.cycle.contracts import (
    AttemptMetrics,
    AttemptRecorder,
    AttemptResult,
    Binding,
    SchedulingQueueLike,
    single_node_fit_error,
)
from scheduler.cycle.randomness import CycleRandomness
from scheduler.cycle.reporting import (
    ACTION_SCHEDULING,
    EVENT_FAILED_SCHEDULING,
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    TYPE_WARNING,
    StatusWriter,
    failed_attempt,
    scheduled_attempt,
    scheduled_condition_patch,
)
from scheduler.framework.clock import Clock
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.handle import EventRecorder
from scheduler.framework.objects import Pod
from scheduler.framework.status import Status
from scheduler.framework.types import (
    FitError,
    InvalidPodError,
    NominatingInfo,
    NominatingMode,
    QueuedPodInfo,
)
from scheduler.runtime.framework import Framework

log = logging.getLogger(__name__)

PLUGIN_METRICS_SAMPLE_RATE = 0.1
# Upstream ``clearNominatedNode``: every failure but a PostFilter result.
CLEAR_NOMINATION = NominatingInfo(mode=NominatingMode.OVERRIDE)
# Longest stretch of back-to-back scheduling cycles before other tasks
# (binding cycles, informers, writers) get the event loop.
YIELD_INTERVAL_SECONDS = 0.002
INVALID_POD_PLUGIN = "PodSpec"


def crash_message(error: BaseException) -> str:
    """What the user reads of an unexpected exception: its type, then its
    text (which can be empty, as for a bare ``KeyError()``)."""
    text = str(error)
    kind = type(error).__name__
    return (
        f"scheduling cycle crashed: {kind}: {text}" if text else f"scheduling cycle crashed: {kind}"
    )


class Scheduler:
    def __init__(
        self,
        *,
        queue: SchedulingQueueLike,
        cache: Cache,
        frameworks: Mapping[str, Framework],
        recorders: Mapping[str, EventRecorder],
        status_writer: StatusWriter,
        pod_lister: Callable[[str], Pod | None],
        clock: Clock,
        metrics: AttemptMetrics,
        attempts: AttemptRecorder,
        snapshot: Snapshot | None = None,
        percentage_of_nodes_to_score: int = 0,
        profile_percentages: Mapping[str, int | None] | None = None,
        binds: BindConcurrency = DEFAULT_BINDS,
        randomness: CycleRandomness | None = None,
    ) -> None:
        self._queue = queue
        self._cache = cache
        self._frameworks = frameworks
        self._recorders = recorders
        self._status = status_writer
        self._pod_lister = pod_lister
        self._clock = clock
        self._metrics = metrics
        self._attempts = attempts
        self._profile_percentages = dict(profile_percentages or {})
        randomness = randomness or CycleRandomness.split(None)
        self._sampling = randomness.sampling
        self._algorithm = Algorithm(
            randomness.tie_break, percentage_of_nodes_to_score, nominated=queue
        )
        self._snapshot = snapshot if snapshot is not None else Snapshot()
        self._binding = BindingCycles(
            queue=queue,
            recorders=recorders,
            status_writer=status_writer,
            clock=clock,
            metrics=metrics,
            loop=self,
            binds=binds,
        )
        # The cycle in progress, so that a crash can undo its assume and Reserve.
        self._current: Binding | None = None
        self._stopping = False

    # ------------------------------------------------------------------ loop
    async def run(self) -> None:
        """Pop and schedule until the queue closes or ``stop_popping``."""
        next_yield = 0.0
        while not self._stopping:
            await self._binding.room()
            if self._stopping:
                return
            pinfo = await self._queue.pop()
            if pinfo is None or self._stopping:
                if pinfo is not None:
                    self._queue.done(pinfo.pod.uid)
                return
            popped = self._clock.now()
            try:
                self.schedule_one(pinfo)
            except Exception as error:  # a bug must cost one attempt, not the daemon or the pod
                log.exception("scheduling cycle for %s crashed", pinfo.pod.key)
                self._recover(pinfo, error, popped)
            # Awaiting a queued pod does not suspend when one is
            # available, so without this a burst would run cycle after cycle
            # without letting binds, informers and event writes make progress.
            # Yield at least every YIELD_INTERVAL_SECONDS of scheduling.
            now = self._clock.now()
            if now >= next_yield:
                await self._clock.sleep(0)
                next_yield = self._clock.now() + YIELD_INTERVAL_SECONDS

    def _recover(self, pinfo: QueuedPodInfo, error: Exception, popped: float) -> None:
        """After a crashed cycle: undo Reserve and the assume, then fail the
        attempt as an error, as upstream fails a cycle whose status is an
        error (``handle_failure``: counted as ``error``, requeued with error
        backoff, a FailedScheduling event and PodScheduled=False with reason
        SchedulerError). If even that raises, the popped copy is requeued and
        the user told with it, so the pod is never dropped or left silent."""
        cycle, started = self._queue.scheduling_cycle, popped
        current, self._current = self._current, None
        if current is not None and current.pinfo is pinfo:
            cycle, started = current.cycle, current.started
            current.framework.reject_waiting(current.assumed.uid, "scheduling cycle aborted")
            current.framework.run_unreserve(current.state, current.assumed, current.host)
        stored = self._cache.get_pod(pinfo.pod.uid)
        if stored is not None and self._cache.is_assumed(stored.uid):
            self.forget(stored)
        message = crash_message(error)
        framework = self._frameworks.get(pinfo.pod.scheduler_name)
        if framework is not None:
            try:
                self.handle_failure(
                    framework, pinfo, None, Status.as_error(message), cycle=cycle, started=started
                )
                return
            except Exception:
                log.exception("cannot report the crashed cycle of %s", pinfo.pod.key)
        pinfo.unschedulable_plugins = set()
        pinfo.pending_plugins = set()
        try:
            self._queue.add_unschedulable_if_not_present(pinfo, cycle)
        except Exception:
            log.exception("cannot requeue %s", pinfo.pod.key)
            self._queue.done(pinfo.pod.uid)
        if framework is not None:
            try:
                self._tell_user(framework, pinfo.pod, REASON_SCHEDULER_ERROR, message, None)
            except Exception:
                log.exception("cannot tell %s that its cycle crashed", pinfo.pod.key)

    async def lead(self) -> None:
        """``run`` as a leader's work: however it ends (the loop returns, or it
        is cancelled on leadership loss or a fatal error elsewhere), binding
        cycles are fenced and have finished rolling back when it returns, so
        before the elector releases the lease."""
        try:
            await self.run()
        finally:
            self.fence()
            await self._binding.drain(0.0)

    def stop_popping(self) -> None:
        self._stopping = True
        self._binding.stop()

    async def drain(self, deadline_seconds: float) -> int:
        """Wait for binding cycles up to the deadline, then cancel the rest
        (each rolls back). Returns how many had to be cancelled."""
        return await self._binding.drain(deadline_seconds)

    def binding_in_flight(self) -> int:
        return self._binding.in_flight()

    def binds_sending(self) -> dict[str, str]:
        """Pod key -> node of each Bind call under way (see ``BindingCycles``)."""
        return self._binding.binds_sending()

    # ------------------------------------------------------ scheduling cycle
    def schedule_one(self, pinfo: QueuedPodInfo) -> bool:
        """The synchronous scheduling cycle. Returns True when a binding task
        was started (it then owns the binding slot)."""
        pod = pinfo.pod
        framework = self._frameworks.get(pod.scheduler_name)
        if framework is None:
            self._queue.done(pod.uid)
            return False
        if pod.deleting:
            recorder = self._recorders.get(framework.profile_name)
            if recorder is not None:
                recorder.event(
                    pod.raw,
                    TYPE_WARNING,
                    EVENT_FAILED_SCHEDULING,
                    ACTION_SCHEDULING,
                    f"skip schedule deleting pod: {pod.namespace}/{pod.name}",
                )
            self._queue.done(pod.uid)
            return False
        if self._cache.is_assumed(pod.uid):
            self._queue.done(pod.uid)
            return False
        cycle = self._queue.scheduling_cycle
        state = CycleState(
            record_plugin_metrics=self._sampling.random() < PLUGIN_METRICS_SAMPLE_RATE
        )
        started = self._clock.now()

        if pod.parse_error:
            invalid = InvalidPodError(pod, pod.parse_error, INVALID_POD_PLUGIN)
            rejection = Status.unresolvable(str(invalid)).with_plugin(INVALID_POD_PLUGIN)
            self.handle_failure(framework, pinfo, invalid, rejection, cycle=cycle, started=started)
            return False
        result = self._run_algorithm(framework, state, pinfo, cycle, started)
        if result is None:
            return False
        host = result.suggested_host
        assumed = dataclasses.replace(pod, node_name=host)
        try:
            self._cache.assume_pod(assumed)
        except CacheError as error:
            self.handle_failure(
                framework, pinfo, None, Status.as_error(error), cycle=cycle, started=started
            )
            return False
        self._queue.delete_nominated_pod_if_exists(pod)
        binding = Binding(framework, state, pinfo, assumed, host, started, cycle)
        self._current = binding

        status = framework.run_reserve(state, assumed, host)
        if status is not None:
            self._undo_assume(binding, status)
            return False
        status = framework.run_permit(state, assumed, host)
        if status is not None and not status.is_wait():
            self._undo_assume(binding, status)
            return False

        self.activate(state)
        self._attempts.record(pod.key, scheduled_attempt(cycle, self._clock.wall(), result))
        self._binding.start(binding)
        self._current = None
        return True

    def _run_algorithm(
        self,
        framework: Framework,
        state: CycleState,
        pinfo: QueuedPodInfo,
        cycle: int,
        started: float,
    ) -> ScheduleResult | None:
        """Find a host; on failure run PostFilter, report, requeue, return None."""
        pod = pinfo.pod
        algorithm_started = self._clock.now()
        self._cache.update_snapshot(self._snapshot)
        percentage = self._profile_percentages.get(framework.profile_name)
        try:
            return self._algorithm.schedule_pod(framework, state, pod, self._snapshot, percentage)
        except FitError as fit_error:
            nominating = self._post_filter(framework, state, pod, fit_error)
            rejection = Status.unschedulable(str(fit_error))
            self.handle_failure(
                framework,
                pinfo,
                fit_error,
                rejection,
                cycle=cycle,
                started=started,
                nominating=nominating,
            )
        except SchedulingError as error:
            self.handle_failure(framework, pinfo, None, error.status, cycle=cycle, started=started)
        finally:
            self._metrics.algorithm(self._clock.now() - algorithm_started)
        return None

    def _undo_assume(self, binding: Binding, status: Status) -> None:
        """Reserve or Permit failed: unreserve, forget, report, requeue."""
        binding.framework.run_unreserve(binding.state, binding.assumed, binding.host)
        self.forget(binding.assumed)
        self._current = None
        pod = binding.pinfo.pod
        self.handle_failure(
            binding.framework,
            binding.pinfo,
            single_node_fit_error(pod, binding.host, status),
            status,
            cycle=binding.cycle,
            started=binding.started,
        )

    def _post_filter(
        self, framework: Framework, state: CycleState, pod: Pod, fit_error: FitError
    ) -> NominatingInfo:
        if not framework.has_post_filter_plugins() or fit_error.num_all_nodes == 0:
            return NominatingInfo(mode=NominatingMode.OVERRIDE)
        result, status = framework.run_post_filter(state, pod, fit_error.diagnosis.node_to_status)
        if status.is_error():
            log.warning("PostFilter failed for %s: %s", pod.key, status.message())
        if status.message():
            fit_error.diagnosis.post_filter_msg = status.message()
        if result is not None and result.nominating_info is not None:
            return result.nominating_info
        return NominatingInfo(mode=NominatingMode.NOOP)

    def forget(self, assumed: Pod) -> bool:
        if self._cache.get_pod(assumed.uid) is None:
            # Deleted while its bind was in flight: the event handlers have
            # already released it (kubernetes#134157).
            log.debug("assumed pod %s was already forgotten", assumed.key)
            return False
        try:
            self._cache.forget_pod(assumed)
        except CacheError as error:
            log.error("cannot forget assumed pod %s: %s", assumed.key, error)
            return False
        return True

    def binding_done(self) -> None:
        pass

    def node_exists(self, name: str) -> bool:
        info = self._cache.node_info(name)
        return info is not None and info.node is not None

    def fence(self) -> None:
        """Leadership lost: stop popping, no PreBind/Bind from now on, binding
        cycles in flight cancelled (see ``BindingCycles.fence``)."""
        self._stopping = True
        self._binding.fence()

    def activate(self, state: CycleState) -> None:
        if state.pods_to_activate:
            pods = list(state.pods_to_activate.values())
            state.pods_to_activate.clear()
            self._queue.activate(pods)

    # --------------------------------------------------------------- failure
    def handle_failure(
        self,
        framework: Framework,
        pinfo: QueuedPodInfo,
        fit_error: FitError | None,
        status: Status,
        *,
        cycle: int,
        started: float,
        nominating: NominatingInfo | None = None,
    ) -> None:
        """Upstream ``handleSchedulingFailure``: count and record the attempt,
        requeue the pod (unless it is gone or bound meanwhile), tell the user."""
        rejected = fit_error is not None or status.is_rejected()
        reason = REASON_UNSCHEDULABLE if rejected else REASON_SCHEDULER_ERROR
        message = str(fit_error) if fit_error is not None else status.message()
        self._record_failure(
            framework,
            pinfo,
            fit_error,
            reason=reason,
            message=message,
            cycle=cycle,
            started=started,
        )
        fresh = self._requeue(pinfo, cycle)
        if fresh is not None:
            # Upstream ``AddNominatedPod``: in memory first, then the API write.
            self._queue.add_nominated_pod(fresh, nominating or CLEAR_NOMINATION)
            self._tell_user(framework, fresh, reason, message, nominating)
        log.info(
            "pod %s is unschedulable: %s" if rejected else "error scheduling pod %s: %s",
            pinfo.pod.key,
            message,
        )

    def _record_failure(
        self,
        framework: Framework,
        pinfo: QueuedPodInfo,
        fit_error: FitError | None,
        *,
        reason: str,
        message: str,
        cycle: int,
        started: float,
    ) -> None:
        """Metrics, the rejector plugins the queue's hints will ask, the attempt log."""
        result = (
            AttemptResult.UNSCHEDULABLE if reason == REASON_UNSCHEDULABLE else AttemptResult.ERROR
        )
        self._metrics.attempt(result, framework.profile_name, self._clock.now() - started)
        if fit_error is not None:
            pinfo.unschedulable_plugins = set(fit_error.diagnosis.unschedulable_plugins)
            pinfo.pending_plugins = set(fit_error.diagnosis.pending_plugins)
        else:
            pinfo.unschedulable_plugins = set()
            pinfo.pending_plugins = set()
        self._attempts.record(
            pinfo.pod.key, failed_attempt(cycle, self._clock.wall(), reason, message, fit_error)
        )

    def _requeue(self, pinfo: QueuedPodInfo, cycle: int) -> Pod | None:
        """Back to the queue with the informer's current copy; None (and the
        attempt just ends) if the pod is gone, recreated or bound meanwhile."""
        pod = pinfo.pod
        fresh = self._pod_lister(pod.key)
        if fresh is None or fresh.uid != pod.uid or fresh.node_name:
            self._queue.done(pod.uid)
            return None
        pinfo.pod = fresh
        self._queue.add_unschedulable_if_not_present(pinfo, cycle)
        return fresh

    def _tell_user(
        self,
        framework: Framework,
        pod: Pod,
        reason: str,
        message: str,
        nominating: NominatingInfo | None,
    ) -> None:
        """A FailedScheduling event and the PodScheduled=False patch (with the
        nominated node set or cleared as PostFilter said)."""
        recorder = self._recorders.get(framework.profile_name)
        if recorder is not None:
            recorder.event(
                pod.raw, TYPE_WARNING, EVENT_FAILED_SCHEDULING, ACTION_SCHEDULING, message
            )
        nominated: str | None = None
        if nominating is not None and nominating.mode == NominatingMode.OVERRIDE:
            nominated = nominating.node_name
        elif nominating is None:
            nominated = ""  # clearNominatedNode
        patch = scheduled_condition_patch(pod, reason, message, self._clock.wall(), nominated)
        if patch is not None:
            self._status.submit(pod.namespace, pod.name, patch, uid=pod.uid)
