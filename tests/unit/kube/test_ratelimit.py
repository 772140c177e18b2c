"""The priority token bucket: pure core with a fake clock, and the async waiter."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from scheduler.framework.clock import RealClock
from scheduler.kube.ratelimit import Priority, PriorityLimiter, RateLimiter, TokenBucket

CRITICAL, NORMAL, LOW = Priority.CRITICAL, Priority.NORMAL, Priority.LOW


@pytest.mark.parametrize(
    ("qps", "burst", "takes_at", "expected"),
    [
        pytest.param(10, 3, [0, 0, 0, 0], [True, True, True, False], id="burst then empty"),
        pytest.param(10, 1, [0, 0.05, 0.1], [True, False, True], id="refills at qps"),
        pytest.param(
            10, 2, [0, 0, 10, 10, 10], [True, True, True, True, False], id="refill caps at burst"
        ),
        pytest.param(2, 0, [0, 0], [True, False], id="burst below one means one"),
    ],
)
def test_token_bucket(qps: float, burst: int, takes_at: list[float], expected: list[bool]) -> None:
    bucket = TokenBucket(qps, burst, now=0.0)
    assert [bucket.try_take(t) for t in takes_at] == expected


def test_token_bucket_says_when_the_next_token_comes() -> None:
    bucket = TokenBucket(4, 1, now=0.0)
    assert bucket.seconds_until_token(0.0) == 0.0
    assert bucket.try_take(0.0)
    assert bucket.seconds_until_token(0.0) == pytest.approx(0.25)
    assert bucket.seconds_until_token(0.2) == pytest.approx(0.05)


@dataclass(frozen=True)
class Step:
    """At time ``at``: admit ``who`` (if given) with ``priority``, then grant."""

    at: float
    who: str = ""
    priority: Priority = NORMAL


def run_steps(qps: float, burst: int, steps: list[Step]) -> list[str]:
    """Who went, in order: admitted at once, or granted later."""
    limiter: PriorityLimiter[str] = PriorityLimiter(qps, burst, now=0.0)
    went: list[str] = []
    for step in steps:
        if step.who and limiter.admit(step.who, step.priority, step.at):
            went.append(step.who)
        went.extend(limiter.grant(step.at))
    return went


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        pytest.param(
            [Step(0, "e1", LOW), Step(0, "e2", LOW), Step(0, "b1", CRITICAL), Step(1), Step(2)],
            ["e1", "b1", "e2"],
            id="bind overtakes a queued event",
        ),
        pytest.param(
            [
                Step(0, "e1", LOW),
                Step(0, "s1", NORMAL),
                Step(0, "e2", LOW),
                Step(0, "b1", CRITICAL),
                Step(1),
                Step(2),
                Step(3),
            ],
            ["e1", "b1", "s1", "e2"],
            id="strict priority order among waiters",
        ),
        pytest.param(
            [
                Step(0, "b1", CRITICAL),
                Step(0, "b2", CRITICAL),
                Step(0, "b3", CRITICAL),
                Step(1),
                Step(2),
            ],
            ["b1", "b2", "b3"],
            id="fifo within a priority",
        ),
        pytest.param(
            [Step(0, "e1", LOW), Step(0, "e2", LOW), Step(1.5, "b1", CRITICAL)],
            ["e1", "b1"],
            id="newcomer bind takes a fresh token before queued events",
        ),
        pytest.param(
            [Step(0, "b1", CRITICAL), Step(0, "b2", CRITICAL), Step(1.5, "e1", LOW), Step(1.5)],
            ["b1", "b2"],
            id="newcomer event waits behind queued binds",
        ),
    ],
)
def test_priority_limiter_order(steps: list[Step], expected: list[str]) -> None:
    assert run_steps(qps=1, burst=1, steps=steps) == expected


def test_priority_limiter_cancel_and_next_grant() -> None:
    limiter: PriorityLimiter[str] = PriorityLimiter(2, 1, now=0.0)
    assert limiter.next_grant_in(0.0) is None
    assert limiter.admit("a", LOW, 0.0)
    assert not limiter.admit("b", LOW, 0.0)
    assert not limiter.admit("c", CRITICAL, 0.0)
    assert limiter.queued() == 2
    assert limiter.queued(CRITICAL) == 1
    assert limiter.next_grant_in(0.0) == pytest.approx(0.5)
    assert limiter.cancel("c")
    assert not limiter.cancel("c")
    assert limiter.grant(0.5) == ["b"]
    assert limiter.next_grant_in(0.5) is None


def test_priority_limiter_without_qps_admits_everything() -> None:
    limiter: PriorityLimiter[str] = PriorityLimiter(0, 0, now=0.0)
    assert limiter.unlimited
    assert all(limiter.admit(str(i), LOW, 0.0) for i in range(100))


async def test_rate_limiter_lets_a_bind_through_ahead_of_queued_events() -> None:
    # 100 tokens/s, one at a time: ordering is decided by the core; this only
    # proves that the async waiter follows it.
    limiter = RateLimiter(100, 1, RealClock())
    order: list[str] = []

    async def request(name: str, priority: Priority) -> None:
        await limiter.acquire(priority)
        order.append(name)

    async with asyncio.TaskGroup() as group:
        for i in range(5):
            group.create_task(request(f"event-{i}", LOW))
        await asyncio.sleep(0)  # let the events queue first
        group.create_task(request("bind", CRITICAL))
    assert order[:2] == ["event-0", "bind"]
    assert order[2:] == [f"event-{i}" for i in range(1, 5)]
    limiter.close()


async def test_rate_limiter_cancelled_waiter_leaves_the_queue() -> None:
    limiter = RateLimiter(1, 1, RealClock())
    await limiter.acquire(LOW)  # spends the only token; the next one is a second away
    waiter = asyncio.create_task(limiter.acquire(LOW))
    await asyncio.sleep(0)
    assert limiter.queued() == 1
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert limiter.queued() == 0
    limiter.close()
