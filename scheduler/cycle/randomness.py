"""The scheduling loop's random generators, one per purpose.

Two things in the loop draw random numbers: the tie-break among the
best-scored nodes (``select_host``) and the choice of which cycles record
plugin metrics. Each draws from its own generator.

Invariants:
- A draw for one purpose never moves another's sequence: with a seed, the
  placements are the same whether or not a cycle is sampled, at any rate.
- With a seed, every generator is derived from it deterministically (one
  draw each from the seeded source, in a fixed order), so one seed fixes all.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CycleRandomness:
    tie_break: random.Random  # which of the equally best nodes (select_host)
    sampling: random.Random  # which cycles record plugin metrics

    @classmethod
    def split(cls, source: random.Random | None) -> CycleRandomness:
        """One generator per purpose, each seeded from ``source`` (a seeded
        generator gives the same generators every time); unseeded without one."""
        if source is None:
            return cls(random.Random(), random.Random())
        return cls(random.Random(source.getrandbits(64)), random.Random(source.getrandbits(64)))
