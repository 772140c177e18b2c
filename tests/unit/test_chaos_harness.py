"""The chaos suite's own rules: a fault that lands when nothing is pending and
no bind is in flight fails the scenario ("fault too late"), and the summary
table lines up its columns."""

from __future__ import annotations

import pytest

from tests.integration.chaos.harness import Outcome, in_flight, table
from tests.unit.fuzz.strategies import EXAMPLES_ENV, examples


def test_a_fault_with_nothing_in_flight_is_too_late() -> None:
    with pytest.raises(AssertionError, match="fault too late"):
        in_flight(pending=0, binds=0)


def test_a_bind_fault_with_only_queued_pods_is_too_late() -> None:
    with pytest.raises(AssertionError, match="no bind in flight"):
        in_flight(pending=5, binds=0, need_binds=True)


@pytest.mark.parametrize(("pending", "binds"), [(3, 0), (0, 2), (5, 7)])
def test_a_fault_with_work_in_flight_is_described(pending: int, binds: int) -> None:
    assert in_flight(pending, binds) == f"{pending} pending, {binds} binds in flight"


def test_summary_table_lines_up() -> None:
    row = Outcome("apiserver_restart", 505, ["apiserver restart"], 0, 0, 0, 0, "3 pending")
    row.observed = ["pods relists +1"]
    header, rule, line = table([row])
    assert header.rstrip().endswith("fault observed   oracle independent")
    assert line.rstrip().endswith("yes")
    assert header.index("fault observed") == line.index("pods relists +1")
    assert set(rule.replace(" ", "")) == {"-"}
    assert header.split()[:2] == ["scenario", "pods"]
    assert line.split()[:4] == ["apiserver_restart", "505", "apiserver", "restart"]
    assert header.index("pods") == line.index("505")


@pytest.mark.parametrize(
    ("env", "default", "expected"),
    [
        pytest.param("", 100, 100, id="default-run-keeps-the-default"),
        pytest.param("2000", 100, 2000, id="make-chaos-is-20x-a-100-example-test"),
        pytest.param("2000", 12, 240, id="make-chaos-is-20x-a-12-example-test"),
    ],
)
def test_make_chaos_runs_every_fuzzer_at_20x(
    monkeypatch: pytest.MonkeyPatch, env: str, default: int, expected: int
) -> None:
    monkeypatch.setenv(EXAMPLES_ENV, env)
    assert examples(default) == expected
