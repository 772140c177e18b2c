"""The AutoscaleEnforcer workload's results: rounds to a document with
spreads, its Markdown, and its part of docs/benchmarks.md's results."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from bench import autoscale_report
from bench.autoscale_report import AutoscaleRound, document, markdown
from bench.publish import results_section

ROUND = AutoscaleRound(
    quiet_pods_per_second=200.0,
    quiet_cpu_ms_per_pod=3.7,
    storm_pods_per_second=120.0,
    storm_cpu_ms_per_pod=6.2,
    requests_sent=15000,
    requests_per_second=1000.0,
    codes={"200": 15000},
    queued=0,
    while_requests=6000,
    while_p50_ms=0.5,
    while_p99_ms=10.0,
    after_requests=9000,
    after_p50_ms=0.2,
    after_p99_ms=0.7,
)
CONTEXT: dict[str, Any] = {
    "started": "2026-12-01T03:00:00+00:00",
    "command": "python -m bench.autoscale",
    "commit": "abc",
    "machine": {"cpus": 2, "platform": "Linux", "python": "3.11.7"},
    "nodes": 500,
    "vms": 1000,
    "rate": 1000,
    "storm_seconds": 10.0,
}


def rounds(*p99s: float) -> list[AutoscaleRound]:
    return [replace(ROUND, while_p99_ms=p99) for p99 in p99s]


@pytest.mark.parametrize(
    ("p99s", "expected"),
    [
        pytest.param((10.0,), {"min": 10.0, "median": 10.0, "max": 10.0}, id="one round"),
        pytest.param((9.0, 14.0, 11.0), {"min": 9.0, "median": 11.0, "max": 14.0}, id="three"),
    ],
)
def test_every_figure_is_spread_over_the_rounds(
    p99s: tuple[float, ...], expected: dict[str, float]
) -> None:
    doc = document(CONTEXT, rounds(*p99s))
    assert doc["summary"]["while_p99_ms"] == expected
    assert set(doc["summary"]) == {key for key, _, _ in autoscale_report.ROWS}
    assert len(doc["runs"]) == len(p99s)


def test_no_round_is_an_error() -> None:
    with pytest.raises(ValueError, match="no round"):
        document(CONTEXT, [])


def test_markdown_states_the_target_the_spread_and_every_round() -> None:
    text = markdown(document(CONTEXT, rounds(9.0, 14.0, 11.0)))
    assert "p99 while scheduling (ms; target <= 5) | 11.00 [9.00-14.00] |" in text
    assert "| agent answers by status, all rounds | 200: 45000 |" in text
    assert text.count("- round ") == 3
    assert "`abc`" in text


def test_results_section_quotes_the_autoscale_file(tmp_path: Path) -> None:
    doc = document(CONTEXT, rounds(10.0))
    (tmp_path / f"{autoscale_report.STEM}.json").write_bytes(orjson.dumps(doc))
    section = results_section(tmp_path)
    assert section.startswith("### AutoscaleEnforcer agent storm")
    assert "| VM pods/s during the storm | 120.0 |" in section
