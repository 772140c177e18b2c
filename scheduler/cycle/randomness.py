"""The scheduling loop's random generators, one per purpose.

Three things in the loop draw random numbers: the tie-break among the
best-scored nodes (``select_host``), the choice of which cycles record
plugin metrics, and plugins themselves (DefaultPreemption's starting offset
among candidates, AutoscaleEnforcer's ``randomize`` scores), which get
theirs from the Handle (``handle.rng_for(NAME)``). Each draws from its own
generator.

Invariants:
- A draw for one purpose never moves another's sequence: with a seed, the
  placements are the same whether or not a cycle is sampled, at any rate,
  and whatever any plugin draws; one plugin's draws never move another's.
- With a seed, every generator is derived from it deterministically (one
  draw each from the seeded source, in a fixed order: tie-break, sampling,
  plugins), so one seed fixes all.
- Each plugin's generator is derived from the plugins' seed, the profile
  name and the plugin name alone (hashed), so it does not depend on which
  other plugins are enabled nor on the order they are built in; two
  profiles enabling the same plugin get different generators.
- Without a seed, every generator is seeded from the OS, as upstream's are.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PluginRandomness:
    """Where each plugin's generator comes from; ``seed`` None = unseeded."""

    seed: int | None = None

    def generator(self, profile: str, plugin: str) -> random.Random:
        """A new generator for ``plugin`` in ``profile``: the same sequence for
        the same (seed, profile, plugin), whenever it is asked for."""
        if self.seed is None:
            return random.Random()
        # A str seed is hashed (SHA-512), the same in every process; the repr
        # of the tuple keeps (a, "b/c") and (a/b, "c") apart.
        return random.Random(repr((self.seed, profile, plugin)))


@dataclass(frozen=True, slots=True)
class CycleRandomness:
    tie_break: random.Random  # which of the equally best nodes (select_host)
    sampling: random.Random  # which cycles record plugin metrics
    plugins: PluginRandomness = PluginRandomness()  # each plugin's own (via the Handle)

    @classmethod
    def split(cls, source: random.Random | None) -> CycleRandomness:
        """One generator per purpose, each seeded from ``source`` (a seeded
        generator gives the same generators every time); unseeded without one."""
        if source is None:
            return cls(random.Random(), random.Random(), PluginRandomness())
        tie_break = random.Random(source.getrandbits(64))
        sampling = random.Random(source.getrandbits(64))
        return cls(tie_break, sampling, PluginRandomness(source.getrandbits(64)))
