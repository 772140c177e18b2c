"""``SimClock``: simulated time that moves only when the simulator says so.

``sleep(0)`` yields to the event loop; ``sleep(s)`` parks the caller on a
timer until the simulator calls ``advance_to_next`` (which jumps ``now`` to
the earliest timer and wakes every sleeper due by then). Nothing waits in
real time, so backoff, queue flushes and PreBind polls cost no wall time and
a run is repeatable.

Invariants: ``now`` never goes back; ``wall - now`` is constant; a cancelled
sleeper's timer is skipped.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools


class SimClock:
    def __init__(self, wall: float, now: float = 0.0) -> None:
        self._now = now
        self._offset = wall - now
        self._timers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._sequence = itertools.count()

    def now(self) -> float:
        return self._now

    def wall(self) -> float:
        return self._now + self._offset

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._timers, (self._now + seconds, next(self._sequence), waiter))
        try:
            await waiter
        finally:
            waiter.cancel()

    def next_deadline(self) -> float | None:
        """The earliest live timer, or None when nobody sleeps."""
        while self._timers and self._timers[0][2].done():
            heapq.heappop(self._timers)
        return self._timers[0][0] if self._timers else None

    def advance_to_next(self) -> bool:
        """Jump to the earliest timer and wake all sleepers due; False if none."""
        deadline = self.next_deadline()
        if deadline is None:
            return False
        self._now = max(self._now, deadline)
        while self._timers and self._timers[0][0] <= self._now:
            _, _, waiter = heapq.heappop(self._timers)
            if not waiter.done():
                waiter.set_result(None)
        return True
