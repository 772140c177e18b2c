"""Client-side rate limiting (clientConnection ``qps``/``burst``) with priorities.

A token bucket refills at ``qps`` tokens per second up to ``burst``. Requests
that find no token wait in one FIFO per ``Priority``; each new token goes to
the oldest waiter of the most urgent non-empty priority. So a bind queued
behind a thousand events takes the very next token: binds are never starved
by status patches or events (the reverse can happen under sustained bind load,
by design: events are best-effort and have their own bounded buffer).

What is limited: every write and every ``request()`` the client makes. What is
not: lists and watches. Upstream client-go limits them too, but a watch is one
long-lived request per resource and a (re)list is already paced by the
informer's exponential backoff; putting them behind queued events would only
delay the informers, which is what every decision depends on.

``PriorityLimiter`` is the pure core (time passed in, no asyncio);
``RateLimiter`` is the thin async waiter on top, driven by one timer.
Invariant: a request takes a token immediately only if no request of the same
or a more urgent priority is already waiting, so FIFO holds within a priority.
``qps <= 0`` disables limiting, as in client-go.
"""

from __future__ import annotations

import asyncio
import enum
from collections import deque
from typing import Generic, TypeVar

from scheduler.framework.clock import Clock

T = TypeVar("T")


class Priority(enum.IntEnum):
    """Lower value = more urgent."""

    CRITICAL = 0  # binds and the writes a binding cycle waits on (PreBind claim status)
    NORMAL = 1  # pod status patches after failures, nominations, preemption writes
    LOW = 2  # events


class TokenBucket:
    __slots__ = ("_burst", "_last", "_rate", "_tokens")

    def __init__(self, qps: float, burst: int, now: float) -> None:
        if qps <= 0:
            raise ValueError("qps must be positive for a token bucket")
        self._rate = qps
        self._burst = float(max(burst, 1))
        self._tokens = self._burst
        self._last = now

    def _refill(self, now: float) -> None:
        elapsed = now - self._last
        if elapsed > 0:
            self._tokens = min(self._burst, self._tokens + elapsed * self._rate)
            self._last = now

    def try_take(self, now: float) -> bool:
        self._refill(now)
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def seconds_until_token(self, now: float) -> float:
        self._refill(now)
        return max(0.0, (1.0 - self._tokens) / self._rate)


class PriorityLimiter(Generic[T]):
    """Who gets the next token. ``T`` is whatever identifies a waiter."""

    def __init__(self, qps: float, burst: int, now: float) -> None:
        self._bucket = TokenBucket(qps, burst, now) if qps > 0 else None
        self._queues: dict[Priority, deque[T]] = {p: deque() for p in Priority}

    @property
    def unlimited(self) -> bool:
        return self._bucket is None

    def queued(self, priority: Priority | None = None) -> int:
        if priority is None:
            return sum(len(q) for q in self._queues.values())
        return len(self._queues[priority])

    def admit(self, waiter: T, priority: Priority, now: float) -> bool:
        """True: go now. False: ``waiter`` is queued until ``grant`` returns it."""
        if self._bucket is None:
            return True
        ahead = any(self._queues[p] for p in Priority if p <= priority)
        if not ahead and self._bucket.try_take(now):
            return True
        self._queues[priority].append(waiter)
        return False

    def grant(self, now: float) -> list[T]:
        """Waiters that now hold a token, most urgent first (FIFO within a priority)."""
        granted: list[T] = []
        if self._bucket is None:
            return granted
        for priority in Priority:
            queue = self._queues[priority]
            while queue and self._bucket.try_take(now):
                granted.append(queue.popleft())
            if queue:
                break
        return granted

    def cancel(self, waiter: T) -> bool:
        """Forget a queued waiter; False if it was not queued (already granted)."""
        for queue in self._queues.values():
            try:
                queue.remove(waiter)
            except ValueError:
                continue
            return True
        return False

    def next_grant_in(self, now: float) -> float | None:
        """Seconds until ``grant`` can return someone; None when nobody waits."""
        if self._bucket is None or not self.queued():
            return None
        return self._bucket.seconds_until_token(now)


class RateLimiter:
    """Async waiting on a ``PriorityLimiter``; one per ``KubeClient``."""

    def __init__(self, qps: float, burst: int, clock: Clock) -> None:
        self._clock = clock
        self._core: PriorityLimiter[asyncio.Future[None]] = PriorityLimiter(qps, burst, clock.now())
        self._timer: asyncio.TimerHandle | None = None

    @property
    def clock(self) -> Clock:
        return self._clock

    def queued(self, priority: Priority | None = None) -> int:
        return self._core.queued(priority)

    async def acquire(self, priority: Priority) -> None:
        if self._core.unlimited:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self._core.admit(future, priority, self._clock.now()):
            return
        self._dispatch()
        try:
            await future
        except asyncio.CancelledError:
            # Still queued: withdraw. Already granted: its token is simply spent.
            self._core.cancel(future)
            raise

    def _dispatch(self) -> None:
        for future in self._core.grant(self._clock.now()):
            if not future.done():
                future.set_result(None)
        self._arm()

    def _arm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        delay = self._core.next_grant_in(self._clock.now())
        if delay is not None:
            self._timer = asyncio.get_running_loop().call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._dispatch()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
