"""The leadership a process listener's child serves on expires on its own
(issue 25 #6): the daemon forwards, with the gate, the end of the leadership
its last lease renewal bought (``ElectionState.leading_until``, the renew
deadline), and the child (``ChildGate``) refuses from then on unless the
daemon renews it. A daemon whose loop stalls therefore leaves an agent
process that stops granting before another replica can take the lease.
Everything on one injected timeline."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from scheduler.leaderelection import ElectionState
from scheduler.services.process import LEADERSHIP_UNCONFIRMED, ChildGate
from tests.unit.test_leaderelection import ME, OTHER, T0, W0, config, held

STEP = 0.05


def first_time(start: float, predicate: Callable[[float], bool], until: float = T0 + 60) -> float:
    """The first instant from ``start`` (in ``STEP``s) at which ``predicate`` holds."""
    t = start
    while t < until:
        if predicate(t):
            return t
        t = round(t + STEP, 6)
    raise AssertionError("never")


@pytest.mark.parametrize(
    ("lease_duration", "renew_deadline"),
    [
        pytest.param(15.0, 10.0, id="upstream defaults (15 s lease, 10 s renew deadline)"),
        pytest.param(4.0, 3.0, id="short lease, deadline close to it"),
    ],
)
def test_a_stalled_daemons_agent_process_stops_granting_before_another_replica_can_lead(
    lease_duration: float, renew_deadline: float
) -> None:
    timing = {"lease_duration": lease_duration, "renew_deadline": renew_deadline}
    leader = ElectionState(config(**timing))
    follower = ElectionState(config(identity=OTHER, **timing))
    lease = held(ME, rv="5", duration=int(lease_duration))
    leader.written(lease, sent_at=T0, now=T0 + 0.1)  # our last successful renewal
    assert follower.observe(lease, T0 + 0.2, W0) is None  # it sees it, fresh: waits
    gate = ChildGate()
    until = leader.leading_until()
    assert until is not None
    gate.update(None, until)  # the last push before the daemon's loop stalls

    stops_granting = first_time(T0, lambda t: gate.refusal(t) is not None)
    can_lead = first_time(T0 + 0.2, lambda t: follower.observe(lease, t, W0 + t) is not None)

    assert gate.refusal(stops_granting) == LEADERSHIP_UNCONFIRMED
    assert stops_granting == pytest.approx(T0 + renew_deadline)
    assert can_lead >= T0 + 0.2 + lease_duration
    assert stops_granting < can_lead


def test_leading_until_is_none_when_the_lease_is_not_ours() -> None:
    state = ElectionState(config())
    assert state.leading_until() is None
    state.written(held(OTHER, rv="2"), sent_at=T0, now=T0)
    assert state.leading_until() is None
