"""The debug attempt records are bounded: a reason histogram, the number of
rejected nodes and a sample of at most ``NODE_SAMPLE`` node verdicts, whatever
the cluster size; building one visits at most the sample beyond what the
user-facing message already computed."""

from __future__ import annotations

import sys
from collections.abc import ItemsView, Iterator, ValuesView
from typing import Any

import pytest

from scheduler.cycle.algorithm import ScheduleResult
from scheduler.cycle.reporting import (
    ATTEMPT_BYTES_BOUND,
    NODE_SAMPLE,
    REASON_UNSCHEDULABLE,
    failed_attempt,
    scheduled_attempt,
)
from scheduler.framework import Status
from scheduler.framework.types import Diagnosis, FitError, NodeToStatus
from tests.support.objects import pod

CPU = "Insufficient cpu"
TAINT = "node(s) had untolerated taint(s)"


class CountingStatuses(dict[str, Status]):
    """Counts how many entries are visited through ``values``/``items``."""

    visited = 0

    def _count(self, source: Iterator[Any]) -> Iterator[Any]:
        for item in source:
            self.visited += 1
            yield item

    def values(self) -> ValuesView[Status]:  # type: ignore[override]
        return self._count(iter(super().values()))  # type: ignore[return-value]

    def items(self) -> ItemsView[str, Status]:  # type: ignore[override]
        return self._count(iter(super().items()))  # type: ignore[return-value]


def statuses(count: int, reason: Any = None) -> CountingStatuses:
    table = CountingStatuses()
    for i in range(count):
        text = reason(i) if reason else (CPU if i % 5 < 3 else TAINT)
        plugin = "NodeResourcesFit" if text == CPU else "TaintToleration"
        table[f"node-{i:05d}"] = Status.unschedulable(text).with_plugin(plugin)
    return table


def deep_size(value: Any) -> int:
    size = sys.getsizeof(value)
    if isinstance(value, dict):
        size += sum(deep_size(k) + deep_size(v) for k, v in value.items())
    elif isinstance(value, list | tuple):
        size += sum(deep_size(v) for v in value)
    return size


def fit_error(table: CountingStatuses) -> FitError:
    diagnosis = Diagnosis(node_to_status=NodeToStatus(statuses=table))
    return FitError(pod("p"), len(table), diagnosis)


def test_a_failed_attempt_on_5000_nodes_keeps_a_histogram_and_a_sample() -> None:
    table = statuses(5000)
    error = fit_error(table)
    message = str(error)  # the cycle builds the user-facing message anyway
    str(error)  # twice, in fact (the rejection status and the report)
    visited_by_message = table.visited

    record = failed_attempt(7, 1.0, REASON_UNSCHEDULABLE, message, error)

    assert record["reasons"] == {CPU: 3000, TAINT: 2000}
    assert record["rejectedNodes"] == 5000
    assert len(record["nodes"]) == NODE_SAMPLE
    assert record["nodes"]["node-00000"] == {
        "plugin": "NodeResourcesFit",
        "code": "Unschedulable",
        "reasons": [CPU],
    }
    assert visited_by_message <= 5000, "the histogram is counted once per attempt"
    assert table.visited - visited_by_message <= NODE_SAMPLE
    assert deep_size(record) <= ATTEMPT_BYTES_BOUND


@pytest.mark.parametrize(
    "reason",
    [
        pytest.param(lambda i: f"reason {i} " + "x" * 5000, id="every node a long new reason"),
        pytest.param(lambda i: "y" * 100_000, id="one huge reason"),
        pytest.param(lambda i: "\U0001f600" * 5000 + str(i), id="four bytes per character"),
    ],
)
def test_the_worst_record_stays_within_the_stated_bound(reason: Any) -> None:
    error = fit_error(statuses(2000, reason))
    message = str(error)
    record = failed_attempt(1, 1.0, REASON_UNSCHEDULABLE, message, error)
    assert deep_size(record) <= ATTEMPT_BYTES_BOUND


def test_a_scheduled_attempt_samples_the_rejected_nodes() -> None:
    table = statuses(4999)
    result = ScheduleResult(
        "node-winner", 5000, 1, diagnosis=Diagnosis(node_to_status=NodeToStatus(table))
    )

    record = scheduled_attempt(3, 1.0, result)

    assert record["rejectedNodes"] == 4999
    assert len(record["nodes"]) == NODE_SAMPLE
    assert table.visited <= NODE_SAMPLE
    assert deep_size(record) <= ATTEMPT_BYTES_BOUND
