"""AttemptLog: bounded per pod and in pods, least recently recorded pod dropped first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from scheduler.ops.diagnostics import AttemptLog


def attempt(cycle: int) -> dict[str, Any]:
    return {"cycle": cycle, "result": "unschedulable", "nodes": {}}


def cycles(log: AttemptLog, pod_key: str) -> list[int] | None:
    namespace, name = pod_key.split("/")
    attempts = log.attempts(namespace, name)
    return None if attempts is None else [a["cycle"] for a in attempts]


Step = Callable[[AttemptLog], None]


def record(pod_key: str, *cycle_numbers: int) -> Step:
    def step(log: AttemptLog) -> None:
        for cycle in cycle_numbers:
            log.record(pod_key, attempt(cycle))

    return step


def forget(pod_key: str) -> Step:
    return lambda log: log.forget(pod_key)


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        pytest.param([], {"ns/a": None}, id="unknown pod"),
        pytest.param([record("ns/a", 1, 2)], {"ns/a": [1, 2]}, id="oldest first"),
        pytest.param([record("ns/a", 1, 2, 3, 4, 5)], {"ns/a": [3, 4, 5]}, id="last N per pod"),
        pytest.param(
            [record("ns/a", 1), record("ns/b", 2), record("ns/c", 3), record("ns/d", 4)],
            {"ns/a": None, "ns/b": [2], "ns/c": [3], "ns/d": [4]},
            id="oldest pod evicted",
        ),
        pytest.param(
            [
                record("ns/a", 1),
                record("ns/b", 2),
                record("ns/c", 3),
                record("ns/a", 5),
                record("ns/d", 6),
            ],
            {"ns/a": [1, 5], "ns/b": None, "ns/c": [3], "ns/d": [6]},
            id="recording refreshes a pod",
        ),
        pytest.param(
            [record("ns/a", 1), forget("ns/a"), forget("ns/never")],
            {"ns/a": None},
            id="forget drops history",
        ),
        pytest.param(
            [record("ns/a", 1), record("other/a", 2)],
            {"ns/a": [1], "other/a": [2]},
            id="namespaces kept apart",
        ),
    ],
)
def test_attempt_log(steps: list[Step], expected: dict[str, list[int] | None]) -> None:
    log = AttemptLog(max_pods=3, attempts_per_pod=3)
    for step in steps:
        step(log)

    assert {key: cycles(log, key) for key in expected} == expected
    assert len(log) <= 3


def test_stores_attempts_as_given() -> None:
    log = AttemptLog()
    given = {"cycle": 7, "scores": {"n1": 10}, "custom": [1, 2]}

    log.record("ns/a", given)

    assert log.attempts("ns", "a") == [given]


@pytest.mark.parametrize(
    ("max_pods", "attempts_per_pod"),
    [pytest.param(0, 1, id="no pods"), pytest.param(1, 0, id="no attempts")],
)
def test_rejects_empty_bounds(max_pods: int, attempts_per_pod: int) -> None:
    with pytest.raises(ValueError, match="positive"):
        AttemptLog(max_pods=max_pods, attempts_per_pod=attempts_per_pod)
