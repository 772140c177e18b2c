"""Exponential backoff with jitter, for reconnecting informers. Pure.

Each ``next()`` returns the delay to wait now and doubles the base up to
``cap``; ``reset()`` after any success starts over from ``initial``. Jitter
adds up to ``jitter`` x the base (client-go's reflector uses 0.8 s doubling to
30 s with full jitter), so many informers that lose the API server together do
not reconnect in lockstep. The random source is injected.
"""

from __future__ import annotations

import random


class Backoff:
    def __init__(
        self,
        *,
        initial: float = 0.8,
        cap: float = 30.0,
        factor: float = 2.0,
        jitter: float = 1.0,
        rng: random.Random | None = None,
    ) -> None:
        if initial <= 0 or cap < initial or factor < 1 or jitter < 0:
            raise ValueError("backoff needs 0 < initial <= cap, factor >= 1, jitter >= 0")
        self._initial = initial
        self._cap = cap
        self._factor = factor
        self._jitter = jitter
        self._rng = rng or random.Random()
        self._base = initial

    def next(self) -> float:
        delay = min(self._cap, self._base * (1.0 + self._jitter * self._rng.random()))
        self._base = min(self._cap, self._base * self._factor)
        return delay

    def reset(self) -> None:
        self._base = self._initial
