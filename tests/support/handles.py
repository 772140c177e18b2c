"""A profile handle with nothing behind it, for unit tests of what the handle
itself answers (its random generators, its feature gates): no informers, no
API, no events; a plugin that reaches for them fails loudly."""

from __future__ import annotations

from scheduler.cache.snapshot import Snapshot
from scheduler.cycle.randomness import PluginRandomness
from scheduler.engine.profilehandle import ProfileHandle
from scheduler.framework.features import FeatureGates
from scheduler.runtime.waiting import WaitingPods
from tests.support.clock import FakeClock


def bare_profile_handle(
    profile: str = "p",
    *,
    randomness: PluginRandomness | None = None,
    feature_gates: FeatureGates | None = None,
) -> ProfileHandle:
    return ProfileHandle(
        profile_name=profile,
        clock=FakeClock(),
        snapshot=Snapshot(),
        informers=None,  # type: ignore[arg-type]
        events=None,  # type: ignore[arg-type]
        api=None,  # type: ignore[arg-type]
        waiting_pods=WaitingPods(),
        feature_gates=feature_gates,
        randomness=randomness,
    )
