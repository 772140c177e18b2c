"""activeQ order and what enters the queue at all."""

from __future__ import annotations

import functools
from collections.abc import Callable

import pytest

from scheduler.queue import QueueName
from scheduler.queue.metrics import UNSCHEDULED_POD_ADD
from tests.support.builders import PodBuilder
from tests.support.clock import FakeClock
from tests.unit.queue.fakes import RecordingMetrics, make_queue, pod, pop


@pytest.mark.parametrize(
    ("arrivals", "expected"),
    [
        pytest.param(
            [("low", 0), ("high", 100), ("mid", 50)], ["high", "mid", "low"], id="by priority"
        ),
        pytest.param(
            [("first", 5), ("second", 5), ("third", 5)],
            ["first", "second", "third"],
            id="equal priority: earlier timestamp first",
        ),
        pytest.param(
            [("old-low", 1), ("new-high", 2), ("new-low", 1)],
            ["new-high", "old-low", "new-low"],
            id="priority beats age",
        ),
        pytest.param(
            [("negative", -10), ("zero", 0)], ["zero", "negative"], id="negative priority last"
        ),
    ],
)
def test_pop_order_is_priority_then_timestamp(
    arrivals: list[tuple[str, int]], expected: list[str]
) -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    for name, priority in arrivals:
        queue.add(pod(name, functools.partial(PodBuilder.priority, priority=priority)))
        clock.advance(0.5)
    assert [pop(queue).pod.name for _ in expected] == expected
    assert queue.pop_nowait() is None


@pytest.mark.parametrize(
    "builder",
    [
        pytest.param(lambda b: b.scheduler("someone-else"), id="another scheduler's pod"),
        pytest.param(lambda b: b.node("n1"), id="assigned pod"),
    ],
)
def test_add_ignores_pods_that_are_not_ours(builder: Callable[[PodBuilder], PodBuilder]) -> None:
    queue = make_queue()
    queue.add(pod("p", builder))
    assert len(queue) == 0


def test_add_records_pod_add_and_pending_gauge() -> None:
    metrics = RecordingMetrics()
    queue = make_queue(metrics=metrics)
    queue.add(pod("a"))
    assert metrics.incoming_events == [(QueueName.ACTIVE, UNSCHEDULED_POD_ADD.label)]
    assert metrics.pending_counts[QueueName.ACTIVE] == 1
    pop(queue)
    assert metrics.pending_counts[QueueName.ACTIVE] == 0


def test_pop_counts_attempts_and_cycles() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add(pod("a"))
    queue.add(pod("b"))
    first, second = pop(queue), pop(queue)
    assert (first.attempts, second.attempts) == (1, 1)
    assert queue.scheduling_cycle == 2
    assert first.initial_attempt_timestamp == clock.now()
    assert {p.key for p in queue.in_flight_pods()} == {"default/a", "default/b"}
