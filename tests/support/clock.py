"""A clock that moves only when the test says so."""

from __future__ import annotations


class FakeClock:
    """``now()`` (monotonic) and ``wall()`` (Unix time) advance together, by hand."""

    def __init__(self, now: float = 1000.0, wall: float = 1_700_000_000.0) -> None:
        self._now = now
        self._wall = wall

    def now(self) -> float:
        return self._now

    def wall(self) -> float:
        return self._wall

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock does not go back")
        self._now += seconds
        self._wall += seconds

    def set(self, now: float) -> None:
        """Jump the monotonic time forward to ``now``."""
        self.advance(now - self._now)
