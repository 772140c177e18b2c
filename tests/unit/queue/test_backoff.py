"""Backoff durations, expirations and the two backoff heaps."""

from __future__ import annotations

import pytest

from scheduler.framework import QueuedPodInfo
from scheduler.queue import BackoffPolicy
from scheduler.queue.backoff import BackoffQueue
from tests.unit.queue.fakes import pod, priority_less


def _pinfo(
    name: str = "p",
    *,
    timestamp: float = 1000.0,
    unschedulable: int = 0,
    errors: int = 0,
    plugins: tuple[str, ...] = ("Fit",),
    priority: int = 0,
) -> QueuedPodInfo:
    return QueuedPodInfo(
        pod=pod(name, lambda b: b.priority(priority)),
        timestamp=timestamp,
        unschedulable_count=unschedulable,
        consecutive_errors_count=errors,
        unschedulable_plugins=set(plugins),
    )


@pytest.mark.parametrize(
    ("count", "seconds"),
    [
        pytest.param(0, 0.0, id="no failure"),
        pytest.param(1, 1.0, id="1st"),
        pytest.param(2, 2.0, id="2nd"),
        pytest.param(3, 4.0, id="3rd"),
        pytest.param(4, 8.0, id="4th"),
        pytest.param(5, 10.0, id="5th capped"),
        pytest.param(6, 10.0, id="6th capped"),
        pytest.param(1000, 10.0, id="many"),
    ],
)
def test_duration_doubles_up_to_the_cap(count: int, seconds: float) -> None:
    assert BackoffPolicy(initial=1.0, maximum=10.0).duration(count) == seconds


@pytest.mark.parametrize(
    ("pinfo", "policy", "expected"),
    [
        pytest.param(_pinfo(), BackoffPolicy(), None, id="never failed: no backoff"),
        pytest.param(
            _pinfo(timestamp=1000.4, unschedulable=1), BackoffPolicy(), 1001.0, id="truncated"
        ),
        pytest.param(
            _pinfo(timestamp=1000.4, unschedulable=1),
            BackoffPolicy(aligned=False),
            1001.4,
            id="not aligned without pop-from-backoff",
        ),
        pytest.param(
            _pinfo(timestamp=1000.0, unschedulable=3), BackoffPolicy(), 1004.0, id="unschedulable 3"
        ),
        pytest.param(
            _pinfo(timestamp=1000.0, unschedulable=4, errors=1),
            BackoffPolicy(),
            1001.0,
            id="errors count wins",
        ),
        pytest.param(_pinfo(timestamp=1000.0, errors=2), BackoffPolicy(), 1002.0, id="errors only"),
        pytest.param(
            _pinfo(unschedulable=3), BackoffPolicy(maximum=0.0), None, id="max 0 disables"
        ),
    ],
)
def test_expiration(pinfo: QueuedPodInfo, policy: BackoffPolicy, expected: float | None) -> None:
    assert policy.expiration(pinfo) == expected


@pytest.mark.parametrize(
    ("now", "backing_off"),
    [
        pytest.param(1000.5, True, id="before expiration"),
        pytest.param(1001.9, True, id="inside the expiration window"),
        pytest.param(1002.0, False, id="next window"),
    ],
)
def test_backing_off_until_the_window_after_expiration(now: float, backing_off: bool) -> None:
    pinfo = _pinfo(timestamp=1000.2, unschedulable=1)
    assert BackoffPolicy().is_backing_off(pinfo, now) is backing_off


def test_expiration_is_cached_until_cleared() -> None:
    pinfo = _pinfo(timestamp=1000.0, unschedulable=1)
    policy = BackoffPolicy()
    assert policy.expiration(pinfo) == 1001.0
    pinfo.unschedulable_count = 3
    assert policy.expiration(pinfo) == 1001.0
    pinfo.backoff_expiration = None
    assert policy.expiration(pinfo) == 1004.0


def test_heaps_order_by_expiration_then_priority() -> None:
    queue = BackoffQueue(BackoffPolicy(), priority_less)
    queue.add(_pinfo("late", unschedulable=3))
    queue.add(_pinfo("low", timestamp=1000.1, unschedulable=1, priority=1))
    queue.add(_pinfo("high", timestamp=1000.7, unschedulable=1, priority=9))
    queue.add(_pinfo("error", errors=1, plugins=()))
    popped = [queue.pop_regular() for _ in range(4)]
    assert [p.pod.name if p else None for p in popped] == ["high", "low", "late", None]
    assert len(queue) == 1
    assert queue.get("default/error") is not None


def test_pop_completed_takes_both_heaps() -> None:
    queue = BackoffQueue(BackoffPolicy(), priority_less)
    queue.add(_pinfo("rejected", unschedulable=1))
    queue.add(_pinfo("error", errors=1, plugins=()))
    queue.add(_pinfo("long", unschedulable=4))
    assert queue.pop_completed(1001.5) == []
    assert [p.pod.name for p in queue.pop_completed(1002.0)] == ["rejected", "error"]
    assert [p.key for p in queue] == ["default/long"]


def test_a_key_lives_in_one_heap() -> None:
    queue = BackoffQueue(BackoffPolicy(), priority_less)
    pinfo = _pinfo(errors=1, plugins=())
    queue.add(pinfo)
    pinfo.unschedulable_plugins = {"Fit"}
    queue.add(pinfo)
    assert len(queue) == 1
    assert queue.regular_len() == 1
