"""Where a queued pod lives: activeQ, backoffQ or the unschedulable pool.

``Placement`` owns the three structures and every move between them,
including the PreEnqueue gate on the way in and the ``incoming`` metric on
each arrival. It decides *where* a pod goes for a given strategy; the
``SchedulingQueue`` decides *when* (events, hints, failures, flushes).

Invariants:
- a key is in at most one of ``active``, ``backoff`` and ``pool``;
- nothing enters ``active`` without passing PreEnqueue; with
  ``pop_from_backoff`` PreEnqueue runs when entering ``backoff`` and is not
  repeated when leaving it;
- a gated pod goes to the pool, unless its key is already in activeQ or
  backoffQ (then the queued entry stays as it is).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping

from scheduler.framework.clock import Clock
from scheduler.framework.types import QueuedPodInfo
from scheduler.queue.backoff import BackoffPolicy, BackoffQueue
from scheduler.queue.heap import KeyedHeap
from scheduler.queue.hints import Strategy
from scheduler.queue.metrics import MoveEvent, QueueMetrics, QueueName
from scheduler.queue.pool import UnschedulablePool
from scheduler.queue.profile import QueueProfile, run_pre_enqueue

Less = Callable[[QueuedPodInfo, QueuedPodInfo], bool]


def _key(pinfo: QueuedPodInfo) -> str:
    return pinfo.key


class Placement:
    def __init__(
        self,
        *,
        less: Less,
        clock: Clock,
        profiles: Mapping[str, QueueProfile],
        policy: BackoffPolicy,
        metrics: QueueMetrics,
    ) -> None:
        self._less = less
        self._clock = clock
        self._profiles = profiles
        self.policy = policy
        self._metrics = metrics
        self.active: KeyedHeap[QueuedPodInfo] = KeyedHeap(_key, less)
        self.backoff = BackoffQueue(policy, less)
        self.pool = UnschedulablePool(profiles)

    @property
    def pop_from_backoff(self) -> bool:
        """Upstream ties both the one-second windows and popping from backoffQ
        to the SchedulerPopFromBackoffQ gate; so does the policy here."""
        return self.policy.aligned

    def __len__(self) -> int:
        return len(self.active) + len(self.backoff) + len(self.pool)

    def __contains__(self, key: object) -> bool:
        return key in self.active or key in self.backoff or key in self.pool

    def find(self, key: str) -> tuple[QueueName, QueuedPodInfo] | None:
        if (pinfo := self.active.get(key)) is not None:
            return QueueName.ACTIVE, pinfo
        if (pinfo := self.backoff.get(key)) is not None:
            return QueueName.BACKOFF, pinfo
        if (pinfo := self.pool.get(key)) is not None:
            return (QueueName.GATED if self.pool.is_gated(key) else QueueName.UNSCHEDULABLE), pinfo
        return None

    def remove(self, key: str) -> QueuedPodInfo | None:
        return self.active.remove(key) or self.backoff.remove(key) or self.pool.remove(key)

    def counts(self) -> dict[QueueName, int]:
        gated = self.pool.gated_count()
        return {
            QueueName.ACTIVE: len(self.active),
            QueueName.BACKOFF: len(self.backoff),
            QueueName.UNSCHEDULABLE: len(self.pool) - gated,
            QueueName.GATED: gated,
        }

    def listing(self) -> dict[str, list[QueuedPodInfo]]:
        def compare(a: QueuedPodInfo, b: QueuedPodInfo) -> int:
            return -1 if self._less(a, b) else 1 if self._less(b, a) else 0

        pooled = list(self.pool)
        return {
            QueueName.ACTIVE: sorted(self.active, key=functools.cmp_to_key(compare)),
            QueueName.BACKOFF: list(self.backoff),
            QueueName.UNSCHEDULABLE: [p for p in pooled if not self.pool.is_gated(p.key)],
            QueueName.GATED: [p for p in pooled if self.pool.is_gated(p.key)],
        }

    # ------------------------------------------------------------------ popping
    def poppable(self) -> bool:
        return bool(self.active) or (self.pop_from_backoff and self.backoff.regular_len() > 0)

    def take_next(self) -> QueuedPodInfo | None:
        """activeQ's head; when activeQ is empty, backoffQ's head (never the error heap)."""
        pinfo = self.active.pop()
        if pinfo is None and self.pop_from_backoff:
            pinfo = self.backoff.pop_regular()
            if pinfo is not None:
                self._metrics.incoming(QueueName.ACTIVE, MoveEvent.POP_FROM_BACKOFF_Q)
        return pinfo

    def flush_backoff(self, now: float) -> None:
        for pinfo in self.backoff.pop_completed(now):
            self.to_active(pinfo, MoveEvent.BACKOFF_COMPLETE, from_backoff=True)

    # -------------------------------------------------------------------- moves
    def requeue(self, pinfo: QueuedPodInfo, strategy: Strategy, event: str) -> QueueName:
        """Put the pod where ``strategy`` says; returns where it ended up."""
        if strategy is Strategy.SKIP:
            if self.pool.add(pinfo):
                self._metrics.incoming(QueueName.UNSCHEDULABLE, event)
            return QueueName.UNSCHEDULABLE
        if strategy is Strategy.AFTER_BACKOFF and self.policy.is_backing_off(
            pinfo, self._clock.now()
        ):
            return QueueName.BACKOFF if self.to_backoff(pinfo, event) else QueueName.UNSCHEDULABLE
        return QueueName.ACTIVE if self.to_active(pinfo, event) else QueueName.UNSCHEDULABLE

    def to_active(self, pinfo: QueuedPodInfo, event: str, from_backoff: bool = False) -> bool:
        """Into activeQ if PreEnqueue lets it; False if the pod stays gated."""
        if not (self.pop_from_backoff and from_backoff):
            self._pre_enqueue(pinfo)
        key = pinfo.key
        if pinfo.gating_plugin:
            if key not in self.active and key not in self.backoff:
                self._gate(pinfo, event)
            return False
        if pinfo.initial_attempt_timestamp is None:
            pinfo.initial_attempt_timestamp = self._clock.now()
        self.pool.remove(key)
        self.backoff.remove(key)
        self.active.push(pinfo)
        self._metrics.incoming(QueueName.ACTIVE, event)
        return True

    def to_backoff(self, pinfo: QueuedPodInfo, event: str) -> bool:
        if self.pop_from_backoff:
            self._pre_enqueue(pinfo)
            if pinfo.gating_plugin:
                self._gate(pinfo, event)
                return False
        self.pool.remove(pinfo.key)
        self.backoff.add(pinfo)
        self._metrics.incoming(QueueName.BACKOFF, event)
        return True

    def _gate(self, pinfo: QueuedPodInfo, event: str) -> None:
        """Keep a gated pod in the pool (another entry already there for the key stays)."""
        existing = self.pool.get(pinfo.key)
        if existing is None:
            self.pool.add(pinfo)
            self._metrics.incoming(QueueName.UNSCHEDULABLE, event)
        elif existing is pinfo:
            self.pool.add(pinfo)  # refresh the gated mark

    def _pre_enqueue(self, pinfo: QueuedPodInfo) -> None:
        run_pre_enqueue(self._profiles.get(pinfo.pod.scheduler_name), pinfo, self._metrics)
