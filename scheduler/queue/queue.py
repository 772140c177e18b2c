"""The scheduling queue: activeQ, backoffQ, the unschedulable pool, in-flight pods.

A pure synchronous core (every method but ``pop`` and ``run``) driven by the
informers, the scheduling loop and two periodic flushes, plus a thin async
``pop`` that waits for work. All methods must be called from the event loop's
thread; none awaits while holding state, so no lock is needed.

Invariants:
- a pod key (``namespace/name``) is in at most one of activeQ, backoffQ and the
  pool; a pod UID is in flight from ``pop`` until ``done`` (which
  ``add_unschedulable_if_not_present`` calls);
- a popped pod has ``attempts`` incremented, the scheduling cycle counter is
  incremented, and its rejector plugin sets are cleared for the new attempt;
- ``scheduler_unschedulable_pods`` counts, per plugin, the queued (not
  in-flight) pods whose rejector sets name it;
- a pod enters activeQ only after passing PreEnqueue; with
  ``pop_from_backoff`` PreEnqueue runs on entering backoffQ instead of leaving it;
- pods of profiles not in ``profiles`` (by ``spec.schedulerName``) and
  assigned pods never enter the queue.

Semantics follow upstream ``scheduling_queue.go`` (v1.36, queueing hints and
SchedulerPopFromBackoffQ on); see ``backoff``, ``hints``, ``inflight`` and
``profile`` for the parts. Deliberate differences: a pod deleted while in
flight is not requeued by ``add_unschedulable_if_not_present``; every event
reaching ``move_all_to_active_or_backoff`` is considered (plugins absent from
a profile's ``events_by_plugin`` are interested in all events), so it is
recorded for in-flight pods even if no plugin registered it explicitly.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence

from scheduler.framework.clock import Clock
from scheduler.framework.events import (
    ASSIGNED_POD_ADD,
    FORCE_ACTIVATE,
    UNSCHEDULABLE_TIMEOUT,
    ActionType,
    ClusterEvent,
    Resource,
)
from scheduler.framework.objects import Pod
from scheduler.framework.types import NominatingInfo, QueuedPodInfo
from scheduler.queue import crosstopology
from scheduler.queue.backoff import BackoffPolicy, failed_with_error
from scheduler.queue.hints import HintEvaluator, Strategy, is_pod_updated, pod_update_events
from scheduler.queue.inflight import InFlight
from scheduler.queue.metrics import (
    UNSCHEDULED_POD_ADD,
    UNSCHEDULED_POD_UPDATE,
    MoveEvent,
    NoopQueueMetrics,
    QueueMetrics,
    QueueName,
)
from scheduler.queue.nominator import Nominator
from scheduler.queue.placement import Placement
from scheduler.queue.profile import QueueProfile

log = logging.getLogger(__name__)

Less = Callable[[QueuedPodInfo, QueuedPodInfo], bool]
PreCheck = Callable[[Pod], bool]

BACKOFF_FLUSH_INTERVAL = 1.0
UNSCHEDULABLE_FLUSH_INTERVAL = 30.0
DEFAULT_MAX_IN_UNSCHEDULABLE = 300.0
POD_SCALE_DOWN = ClusterEvent(Resource.POD, ActionType.UPDATE_POD_SCALE_DOWN)


class SchedulingQueue:
    def __init__(
        self,
        *,
        less: Less,
        clock: Clock,
        profiles: Mapping[str, QueueProfile],
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_in_unschedulable: float = DEFAULT_MAX_IN_UNSCHEDULABLE,
        metrics: QueueMetrics | None = None,
        pop_from_backoff: bool = True,
    ) -> None:
        self._clock = clock
        self._profiles = dict(profiles)
        self._max_in_unschedulable = max_in_unschedulable
        self._metrics: QueueMetrics = metrics if metrics is not None else NoopQueueMetrics()
        self._policy = BackoffPolicy(initial_backoff, max_backoff, aligned=pop_from_backoff)
        self._place = Placement(
            less=less,
            clock=clock,
            profiles=self._profiles,
            policy=self._policy,
            metrics=self._metrics,
        )
        self._in_flight = InFlight(self._metrics)
        self._nominator = Nominator()
        self._hints = HintEvaluator(self._profiles, self._metrics, clock)
        self._deleted_in_flight: set[str] = set()
        self._cycle = 0
        self._closed = False
        self._wakeup = asyncio.Event()
        self._stopped = asyncio.Event()
        self._published: dict[QueueName, int] = {}

    # ------------------------------------------------------------ informer side
    def add(self, pod: Pod) -> None:
        """A new unassigned pod of one of our profiles."""
        if pod.scheduler_name not in self._profiles or pod.assigned:
            return
        if self._place.to_active(self._new_pinfo(pod), UNSCHEDULED_POD_ADD.label):
            self._nominator.add(pod, None)
        self._changed()

    def update(self, old: Pod, new: Pod) -> None:
        """An unassigned pod changed; a pod that got a node leaves the queue."""
        if new.scheduler_name not in self._profiles:
            return
        if new.assigned:
            self.delete(new)
            return
        events = pod_update_events(old, new) if is_pod_updated(old, new) else []
        if new.uid in self._in_flight:
            self._in_flight.record_for(new.uid, events, old, new)
            return
        found = self._place.find(new.key)
        if found is None:
            if self._place.to_active(self._new_pinfo(new), UNSCHEDULED_POD_UPDATE.label):
                self._nominator.add(new, None)
            self._changed()
            return
        self._nominator.update(old, new)
        if found[0] in (QueueName.ACTIVE, QueueName.BACKOFF):
            found[1].pod = new
            self._place.active.fix(new.key)
            self._place.backoff.fix(new.key)
        else:
            pinfo = found[1]
            pinfo.pod = new
            if self._place.pool.get(new.key) is pinfo:
                self._place.pool.add(pinfo)  # index the pod as it is now
            for event in events:
                strategy = self._hints.worth_requeuing(pinfo, event, old, new)
                if self._place.requeue(pinfo, strategy, event.label) is not QueueName.UNSCHEDULABLE:
                    break
        self._changed()

    def delete(self, pod: Pod) -> None:
        """Forget the pod everywhere; if it is in flight, it will not come back."""
        self._nominator.delete(pod)
        removed = self._place.remove(pod.key)
        if removed is not None:
            self._count_rejectors(removed, -1)
        if pod.uid in self._in_flight:
            self._deleted_in_flight.add(pod.uid)
        self._changed()

    def move_all_to_active_or_backoff(
        self, event: ClusterEvent, old: object, new: object, pre_check: PreCheck | None = None
    ) -> None:
        """A cluster event: retry the pooled pods whose hints say it may help
        (only those it may concern are asked: ``UnschedulablePool.concerned``)."""
        pods = self._place.pool.concerned(event, old, new)
        if pre_check is not None:
            pods = [p for p in pods if pre_check(p.pod)]
        self._move_pods(pods, event, old, new)

    def assigned_pod_added(self, pod: Pod) -> None:
        pods = [p for p in self._place.pool if crosstopology.concerns(p, pod)]
        self._move_pods(pods, ASSIGNED_POD_ADD, None, pod)

    def assigned_pod_updated(self, old: Pod, new: Pod) -> None:
        for event in pod_update_events(old, new):
            if POD_SCALE_DOWN.matches(event):
                self.move_all_to_active_or_backoff(event, old, new)
            else:
                pods = [p for p in self._place.pool if crosstopology.concerns(p, new)]
                self._move_pods(pods, event, old, new)

    def activate(self, pods: Iterable[Pod]) -> None:
        """ForceActivate: pooled or backing-off pods go to activeQ now (if
        PreEnqueue lets them); an in-flight pod skips the pool when its attempt
        fails (a targeted wildcard event: backoffQ or activeQ). Others are ignored."""
        for pod in pods:
            pinfo = self._place.pool.get(pod.key)
            from_backoff = False
            if pinfo is None:
                pinfo = self._place.backoff.remove(pod.key)
                if pinfo is None:
                    self._in_flight.record_for(pod.uid, [FORCE_ACTIVATE], None, pod)
                    continue
                from_backoff = True
            self._place.to_active(pinfo, MoveEvent.FORCE_ACTIVATE, from_backoff=from_backoff)
        self._changed()

    # ------------------------------------------------------------ nominator
    def add_nominated_pod(self, pod: Pod, info: NominatingInfo | None) -> None:
        """Record (or clear) where ``pod`` is nominated: the failure handler
        after PostFilter, before the API write that persists it."""
        self._nominator.add(pod, info)

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        """The pod was assumed on a node: it no longer holds a nomination."""
        self._nominator.delete(pod)

    def nominated_pods_for_node(self, node_name: str) -> Sequence[Pod]:
        return self._nominator.pods_for_node(node_name)

    def nominated_by_node(self) -> Mapping[str, Sequence[Pod]]:
        """Every nomination by node, read-only (for one scheduling cycle)."""
        return self._nominator.by_node()

    # ------------------------------------------------------------ scheduling loop
    @property
    def scheduling_cycle(self) -> int:
        return self._cycle

    def pop_nowait(self) -> QueuedPodInfo | None:
        """The next pod to schedule, or None if none is ready or the queue is closed."""
        if self._closed:
            return None
        while True:
            pinfo = self._place.take_next()
            if pinfo is None:
                return None
            if self._in_flight.start(pinfo):
                break
            log.error("pod %s is already in flight; discarding the duplicate", pinfo.key)
            self._count_rejectors(pinfo, -1)
        pinfo.attempts += 1
        self._cycle += 1
        if pinfo.initial_attempt_timestamp is None:
            pinfo.initial_attempt_timestamp = self._clock.now()
        self._count_rejectors(pinfo, -1)
        pinfo.unschedulable_plugins = set()
        pinfo.pending_plugins = set()
        self._changed()
        return pinfo

    async def pop(self) -> QueuedPodInfo | None:
        """Wait for the next pod; None once the queue is closed."""
        while True:
            pinfo = self.pop_nowait()
            if pinfo is not None or self._closed:
                return pinfo
            self._wakeup.clear()
            await self._wakeup.wait()

    def done(self, uid: str) -> None:
        """The attempt for this pod is over (bound, requeued or dropped)."""
        self._in_flight.done(uid)
        self._deleted_in_flight.discard(uid)

    def add_unschedulable_if_not_present(
        self, pinfo: QueuedPodInfo, pod_scheduling_cycle: int
    ) -> None:
        """Requeue a pod whose attempt failed; always calls ``done``.

        The rejector sets on ``pinfo`` decide the counter: none (an error)
        bumps ``consecutive_errors_count``, else ``unschedulable_count``.
        ``pod_scheduling_cycle`` is kept for the upstream signature: with
        queueing hints the in-flight events decide, not the cycle number.
        """
        uid = pinfo.pod.uid
        try:
            if self._closed or uid in self._deleted_in_flight:
                return
            if pinfo.key in self._place:
                log.warning("pod %s failed but is already queued; not requeued", pinfo.key)
                return
            if failed_with_error(pinfo):
                pinfo.consecutive_errors_count += 1
            else:
                pinfo.unschedulable_count += 1
                pinfo.consecutive_errors_count = 0
            pinfo.timestamp = self._clock.now()
            pinfo.backoff_expiration = None
            self._count_rejectors(pinfo, 1)
            strategy = self._in_flight_strategy(pinfo)
            self._place.requeue(pinfo, strategy, MoveEvent.SCHEDULE_ATTEMPT_FAILURE)
        finally:
            self.done(uid)
            self._changed()

    # ------------------------------------------------------------ periodic work
    def flush_backoff_completed(self) -> None:
        """Move every pod whose backoff has completed to activeQ."""
        self._place.flush_backoff(self._clock.now())
        self._changed()

    def flush_unschedulable_leftover(self) -> None:
        """Retry pods that waited in the pool longer than ``max_in_unschedulable``."""
        now = self._clock.now()
        stale = [p for p in self._place.pool if now - p.timestamp > self._max_in_unschedulable]
        if stale:
            self._move_pods(stale, UNSCHEDULABLE_TIMEOUT, None, None)

    async def run(self) -> None:
        """Run both flushes until ``close``: backoff every second on whole
        seconds of the clock, the pool every 30 s. Waits on the clock;
        ``close`` interrupts the wait."""
        now = self._clock.now()
        next_backoff = math.floor(now) + BACKOFF_FLUSH_INTERVAL
        next_leftover = now + UNSCHEDULABLE_FLUSH_INTERVAL
        while not self._closed:
            now = self._clock.now()
            if now >= next_backoff:
                self.flush_backoff_completed()
                next_backoff = math.floor(now) + BACKOFF_FLUSH_INTERVAL
            if now >= next_leftover:
                self.flush_unschedulable_leftover()
                next_leftover = now + UNSCHEDULABLE_FLUSH_INTERVAL
            delay = max(0.0, min(next_backoff, next_leftover) - self._clock.now())
            await self._wait_stopped(delay)

    async def _wait_stopped(self, delay: float) -> None:
        """Sleep on the clock for ``delay``, or until ``close``."""
        sleeping = asyncio.ensure_future(self._clock.sleep(delay))
        stopped = asyncio.ensure_future(self._stopped.wait())
        try:
            await asyncio.wait({sleeping, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in (sleeping, stopped):
                waiter.cancel()

    def close(self) -> None:
        """Stop: ``pop`` returns None from now on and ``run`` returns."""
        self._closed = True
        self._in_flight.clear()
        self._deleted_in_flight.clear()
        self._wakeup.set()
        self._stopped.set()

    # ------------------------------------------------------------ introspection
    def pending_pods(self) -> dict[str, list[QueuedPodInfo]]:
        """Queued pods by sub-queue name (active, backoff, unschedulable, gated);
        activeQ in pop order."""
        return self._place.listing()

    def get(self, key: str) -> tuple[str, QueuedPodInfo] | None:
        """Which sub-queue holds the pod ``namespace/name``, and its info."""
        return self._place.find(key)

    def in_flight_pods(self) -> list[QueuedPodInfo]:
        return self._in_flight.pods()

    def __len__(self) -> int:
        return len(self._place)

    # ------------------------------------------------------------ internals
    def _new_pinfo(self, pod: Pod) -> QueuedPodInfo:
        return QueuedPodInfo(pod=pod, timestamp=self._clock.now())

    def _move_pods(
        self, pods: list[QueuedPodInfo], event: ClusterEvent, old: object, new: object
    ) -> None:
        """Requeue the pooled ``pods`` that ``event`` may help (upstream
        ``movePodsToActiveOrBackoffQueue``); gated pods only on their gate's events."""
        if not pods:  # the usual case (an empty pool, a pod bound): nothing can move
            self._in_flight.record(event, old, new)
            return
        hints = self._hints.round(event, old, new)
        for pinfo in pods:
            if pinfo.gating_plugin and not hints.releases_gate(pinfo):
                continue
            strategy = hints.worth_requeuing(pinfo)
            if strategy is Strategy.SKIP:
                continue
            self._place.pool.remove(pinfo.key)
            if event == UNSCHEDULABLE_TIMEOUT:
                pinfo.was_flushed_from_unschedulable = True
            self._place.requeue(pinfo, strategy, event.label)
        self._in_flight.record(event, old, new)
        self._changed()

    def _in_flight_strategy(self, pinfo: QueuedPodInfo) -> Strategy:
        """Replay the events seen while the pod was in flight through its hints."""
        if failed_with_error(pinfo):
            return Strategy.AFTER_BACKOFF
        recorded = self._in_flight.events_since_pop(pinfo.pod.uid)
        if recorded is None:
            log.error("pod %s came back but was not in flight", pinfo.key)
            return Strategy.AFTER_BACKOFF
        strategy = Strategy.SKIP
        for item in recorded:
            verdict = self._hints.worth_requeuing(pinfo, item.event, item.old, item.new)
            if verdict is Strategy.IMMEDIATELY:
                return verdict
            if verdict is Strategy.AFTER_BACKOFF:
                strategy = verdict
                if not pinfo.pending_plugins:
                    return strategy
        return strategy

    def _count_rejectors(self, pinfo: QueuedPodInfo, delta: int) -> None:
        profile = pinfo.pod.scheduler_name
        for plugin in pinfo.unschedulable_plugins | pinfo.pending_plugins:
            self._metrics.unschedulable_plugin(plugin, profile, delta)

    def _changed(self) -> None:
        """Publish the pending gauges that moved, and wake a waiting ``pop``."""
        for name, count in self._place.counts().items():
            if self._published.get(name) != count:
                self._published[name] = count
                self._metrics.pending(name, count)
        if self._place.poppable():
            self._wakeup.set()
