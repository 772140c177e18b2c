"""The loop's back-pressure follows the adaptive bind limit: fast binds raise
it and the loop then keeps more cycles writing than it started with; slow
binds cut it and the loop then pops only up to the lower limit; a wait at
Permit or in a PreBind past its grace is no writing time. The fake clock
gives the writing times (zero unless a test advances it)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable

import pytest

from scheduler.cycle.binding import PRE_BIND_GRACE
from scheduler.cycle.concurrency import FLOOR_LIMIT, START_LIMIT
from scheduler.framework import Status
from scheduler.runtime.waiting import WaitingPods
from tests.support.objects import pod
from tests.unit.engine.harness import Harness, harness
from tests.unit.engine.plugins import BindStub, PermitStub, make_framework
from tests.unit.engine.test_binding_fence import DEADLINE, HoldingPreBind, until

WARM_UP_PODS = 200  # bound at once: the limit rises well above its start
CEILING = 64


def limit_of(h: Harness) -> int:
    return h.metrics.bind_limits[-1]


async def bind_wave(h: Harness, binder: BindStub, prefix: str, count: int) -> None:
    """``count`` pods through the loop until the queue runs dry, all bound."""
    before = len(binder.bound)
    h.queue.pods.extend(h.queued(pod(f"{prefix}-{i}")) for i in range(count))
    await asyncio.wait_for(h.scheduler.run(), DEADLINE)
    assert await h.scheduler.drain(DEADLINE) == 0
    assert len(binder.bound) == before + count


async def held_wave(h: Harness, binder: BindStub, prefix: str, count: int) -> asyncio.Task[None]:
    """``count`` pods whose binds block; returns the loop once it waits for room."""
    binder.block = asyncio.Event()
    h.queue.pods.extend(h.queued(pod(f"{prefix}-{i}")) for i in range(count))
    loop = asyncio.create_task(h.scheduler.run())
    await until(lambda: h.scheduler.binding_in_flight() == limit_of(h))
    for _ in range(10):
        await asyncio.sleep(0)
    return loop


async def release(h: Harness, binder: BindStub, loop: asyncio.Task[None]) -> None:
    assert binder.block is not None
    binder.block.set()
    await asyncio.wait_for(loop, DEADLINE)
    assert await h.scheduler.drain(DEADLINE) == 0
    binder.block = None


async def test_a_limit_raised_by_fast_binds_lets_the_waiting_loop_pop_more() -> None:
    binder = BindStub("B")
    h = harness(make_framework(bind=[binder]), max_binding=CEILING)
    assert h.metrics.bind_limits == [START_LIMIT]

    await bind_wave(h, binder, "warm", WARM_UP_PODS)
    raised = limit_of(h)
    assert START_LIMIT < raised <= CEILING
    loop = await held_wave(h, binder, "p", raised + 3)

    assert (h.scheduler.binding_in_flight(), len(h.queue.pods)) == (raised, 3)
    await release(h, binder, loop)
    assert len(binder.bound) == WARM_UP_PODS + raised + 3


@dataclasses.dataclass
class Rig:
    """A loop whose Permit and PreBind a test can make wait."""

    binder: BindStub = dataclasses.field(default_factory=lambda: BindStub("B"))
    permit: PermitStub = dataclasses.field(default_factory=lambda: PermitStub("Gang"))
    pre_bind: HoldingPreBind = dataclasses.field(default_factory=HoldingPreBind)
    waiting: WaitingPods = dataclasses.field(default_factory=WaitingPods)

    def harness(self) -> Harness:
        framework = make_framework(
            permit=[self.permit],
            pre_bind=[self.pre_bind],
            bind=[self.binder],
            waiting=self.waiting,
        )
        return harness(framework, max_binding=CEILING)


async def a_second_in_bind(h: Harness, rig: Rig, count: int) -> None:
    loop = await held_wave(h, rig.binder, "p", count)
    assert h.scheduler.binding_in_flight() == count
    h.clock.advance(1.0)  # every held bind has written for a second
    await release(h, rig.binder, loop)


async def a_second_at_permit(h: Harness, rig: Rig, count: int) -> None:
    rig.permit.status, rig.permit.timeout = Status.wait(), 600
    held = [pod(f"p-{i}") for i in range(count)]
    h.queue.pods.extend(h.queued(target) for target in held)
    await asyncio.wait_for(h.scheduler.run(), DEADLINE)  # none writing: all popped
    waiters = [rig.waiting.get(target.uid) for target in held]
    h.clock.advance(1.0)  # every held cycle has waited at Permit for a second
    for waiter in waiters:
        assert waiter is not None
        waiter.allow("Gang")
    assert await h.scheduler.drain(DEADLINE) == 0
    rig.permit.status = None


async def past_the_pre_bind_grace(h: Harness, rig: Rig, count: int) -> None:
    """``slow-*`` pods wait in PreBind; the grace timer (the fake clock's
    sleep moves time) releases each from counting as writing."""
    h.queue.pods.extend(h.queued(pod(f"slow-{i}")) for i in range(count))
    await asyncio.wait_for(h.scheduler.run(), DEADLINE)  # none writing: all popped
    await until(lambda: rig.pre_bind.holding == count)
    assert h.clock.elapsed >= PRE_BIND_GRACE
    rig.pre_bind.release.set()
    assert await h.scheduler.drain(DEADLINE) == 0


Slow = Callable[[Harness, Rig, int], Awaitable[None]]


@pytest.mark.parametrize(
    ("slow", "falls"),
    [
        pytest.param(
            a_second_in_bind, True, id="a second in Bind: the limit falls and pops wait below it"
        ),
        pytest.param(
            a_second_at_permit, False, id="a second at Permit is no writing: the limit holds"
        ),
        pytest.param(
            past_the_pre_bind_grace, False, id="a PreBind past its grace is no sample: it holds"
        ),
    ],
)
async def test_slow_writes_cut_the_limit_and_waits_do_not(slow: Slow, falls: bool) -> None:
    rig = Rig()
    h = rig.harness()
    await bind_wave(h, rig.binder, "warm", WARM_UP_PODS)
    raised = limit_of(h)
    assert raised > START_LIMIT

    await slow(h, rig, raised)
    after = limit_of(h)

    assert FLOOR_LIMIT <= after <= CEILING
    assert (after < raised) == falls
    loop = await held_wave(h, rig.binder, "q", after + 3)
    assert (h.scheduler.binding_in_flight(), len(h.queue.pods)) == (after, 3)
    await release(h, rig.binder, loop)


@pytest.mark.parametrize(
    ("adaptive", "expected"),
    [
        pytest.param(True, START_LIMIT, id="adaptive: starts at 16"),
        pytest.param(False, CEILING, id="pinned: the ceiling from the start"),
    ],
)
async def test_the_loop_first_waits_at_the_starting_limit(adaptive: bool, expected: int) -> None:
    binder = BindStub("B")
    h = harness(make_framework(bind=[binder]), max_binding=CEILING, adaptive=adaptive)
    assert h.metrics.bind_limits == [expected]

    loop = await held_wave(h, binder, "p", expected + 3)

    assert (h.scheduler.binding_in_flight(), len(h.queue.pods)) == (expected, 3)
    await release(h, binder, loop)
    assert h.metrics.bind_limits[0] == expected
