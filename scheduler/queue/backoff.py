"""Backoff: how long a failed pod waits, and the two heaps that hold it meanwhile.

Rules (upstream ``backoff_queue.go``, v1.36):
- the failure count is ``consecutive_errors_count`` when positive (the pod
  failed with an Error, no plugin rejected it), else ``unschedulable_count``;
  a count of 0 means no backoff at all, and so does ``max_backoff == 0``;
- the duration is ``initial * 2**(count-1)``, capped at ``max_backoff``
  (defaults 1 s and 10 s: 1, 2, 4, 8, 10, 10 ... s);
- the expiration is ``timestamp + duration``, truncated to a whole second when
  pods may be popped from backoffQ (``aligned``), and cached in
  ``QueuedPodInfo.backoff_expiration`` until the counters change;
- a pod is backing off while ``expiration >= align(now)``: a pod whose
  expiration falls in the current one-second window still waits for the flush.

Pods with rejector plugins wait in the backoff heap, ordered by expiration and
then (when aligned) by the activeQ order; pods that failed with an error wait
in the error heap, ordered by expiration only, and are never popped early.
All times are the clock's monotonic ``now()`` seconds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from scheduler.framework.types import QueuedPodInfo
from scheduler.queue.heap import KeyedHeap

BACKOFF_WINDOW_SECONDS = 1.0

Less = Callable[[QueuedPodInfo, QueuedPodInfo], bool]


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    initial: float = 1.0
    maximum: float = 10.0
    aligned: bool = True

    def duration(self, count: int) -> float:
        """``initial * 2**(count-1)`` capped at ``maximum``; 0 for no failure."""
        if count <= 0:
            return 0.0
        duration = self.initial
        for _ in range(1, count):
            if duration > self.maximum - duration:
                return self.maximum
            duration += duration
        return duration

    def align(self, moment: float) -> float:
        if not self.aligned:
            return moment
        return math.floor(moment / BACKOFF_WINDOW_SECONDS) * BACKOFF_WINDOW_SECONDS

    def expiration(self, pinfo: QueuedPodInfo) -> float | None:
        """When the pod's backoff completes, or None if it has none (cached)."""
        if self.maximum == 0:
            return None
        count = pinfo.consecutive_errors_count or pinfo.unschedulable_count
        if count == 0:
            return None
        if pinfo.backoff_expiration is None:
            pinfo.backoff_expiration = self.align(pinfo.timestamp + self.duration(count))
        return pinfo.backoff_expiration

    def is_backing_off(self, pinfo: QueuedPodInfo, now: float) -> bool:
        expiration = self.expiration(pinfo)
        return expiration is not None and expiration >= self.align(now)


def failed_with_error(pinfo: QueuedPodInfo) -> bool:
    """No plugin rejected the pod: it came back because of an error."""
    return not pinfo.unschedulable_plugins and not pinfo.pending_plugins


def _key(pinfo: QueuedPodInfo) -> str:
    return pinfo.key


class BackoffQueue:
    """The backoff heap and the error-backoff heap, used as one queue.

    Invariant: a key is in at most one of the two heaps.
    """

    def __init__(self, policy: BackoffPolicy, less: Less) -> None:
        self.policy = policy

        def by_expiration(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
            return self._expires(a) < self._expires(b)

        def by_expiration_then_less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
            ea, eb = self._expires(a), self._expires(b)
            if ea != eb:
                return ea < eb
            return less(a, b)

        regular_less = by_expiration_then_less if policy.aligned else by_expiration
        self._backoff: KeyedHeap[QueuedPodInfo] = KeyedHeap(_key, regular_less)
        self._errors: KeyedHeap[QueuedPodInfo] = KeyedHeap(_key, by_expiration)

    def _expires(self, pinfo: QueuedPodInfo) -> float:
        expiration = self.policy.expiration(pinfo)
        return -math.inf if expiration is None else expiration

    def __len__(self) -> int:
        return len(self._backoff) + len(self._errors)

    def __contains__(self, key: object) -> bool:
        return key in self._backoff or key in self._errors

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        yield from self._backoff
        yield from self._errors

    def regular_len(self) -> int:
        """Pods that ``pop_regular`` may hand out (the error heap excluded)."""
        return len(self._backoff)

    def get(self, key: str) -> QueuedPodInfo | None:
        return self._backoff.get(key) or self._errors.get(key)

    def add(self, pinfo: QueuedPodInfo) -> None:
        """Into the error heap if no plugin rejected the pod, else the backoff heap."""
        if failed_with_error(pinfo):
            self._backoff.remove(pinfo.key)
            self._errors.push(pinfo)
        else:
            self._errors.remove(pinfo.key)
            self._backoff.push(pinfo)

    def fix(self, key: str) -> None:
        self._backoff.fix(key)
        self._errors.fix(key)

    def remove(self, key: str) -> QueuedPodInfo | None:
        return self._backoff.remove(key) or self._errors.remove(key)

    def pop_regular(self) -> QueuedPodInfo | None:
        """The head of the backoff heap, done waiting or not (PopFromBackoffQ)."""
        return self._backoff.pop()

    def pop_completed(self, now: float) -> list[QueuedPodInfo]:
        """Remove and return every pod whose backoff has completed, backoff heap first."""
        done: list[QueuedPodInfo] = []
        for heap in (self._backoff, self._errors):
            while (head := heap.peek()) is not None and not self.policy.is_backing_off(head, now):
                heap.pop()
                done.append(head)
        return done
