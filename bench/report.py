"""Turning runs into the comparison: means over repeats, ratios ours/upstream,
a plain-text table and the JSON document (pure).

A ratio is ``ours / upstream`` of the means: above 1 means ours has more of
it (better for throughput, worse for time, CPU and memory). A metric missing
from any run of a scheduler (no throughput sample in a very short run, no
attempt histogram) has no mean and no ratio.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bench.results import RunResult
from bench.schedulers import SchedulerKind

MIB = 2**20


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str
    read: Callable[[RunResult], float | None]
    digits: int = 1


def _throughput(field: str) -> Callable[[RunResult], float | None]:
    def read(run: RunResult) -> float | None:
        return None if run.throughput is None else float(getattr(run.throughput, field))

    return read


METRICS = (
    Metric("throughput_average", "throughput Average", "pods/s", _throughput("average")),
    Metric("throughput_p50", "throughput Perc50", "pods/s", _throughput("p50")),
    Metric("throughput_p90", "throughput Perc90", "pods/s", _throughput("p90")),
    Metric("throughput_p95", "throughput Perc95", "pods/s", _throughput("p95")),
    Metric("throughput_p99", "throughput Perc99", "pods/s", _throughput("p99")),
    Metric("pods_per_second", "measured pods / wall time", "pods/s", lambda r: r.pods_per_second),
    Metric("wall_seconds", "wall time, measured pods", "s", lambda r: r.wall_seconds),
    Metric("cpu_seconds", "scheduler CPU, whole run", "s", lambda r: r.cpu_seconds, 2),
    Metric(
        "cpu_seconds_measured",
        "scheduler CPU, measured phase",
        "s",
        lambda r: r.cpu_seconds_measured,
        2,
    ),
    Metric("peak_rss_mib", "scheduler peak RSS", "MiB", lambda r: r.peak_rss_bytes / MIB),
    Metric("attempt_p50_ms", "attempt duration p50", "ms", lambda r: r.attempt_p50_ms),
    Metric("attempt_p99_ms", "attempt duration p99", "ms", lambda r: r.attempt_p99_ms),
    Metric(
        "scheduler_writes_per_pod",
        "API writes by the scheduler per pod",
        "",
        lambda r: r.scheduler_writes_per_pod,
        2,
    ),
    Metric(
        "control_plane_cpu_seconds_measured",
        "etcd + apiserver CPU, measured phase",
        "s",
        lambda r: r.control_plane_cpu_seconds_measured,
        2,
    ),
    Metric(
        "bench_cpu_seconds_measured",
        "harness CPU, measured phase",
        "s",
        lambda r: r.bench_cpu_seconds_measured,
        2,
    ),
)
HEADLINE_RATIOS = ("throughput_average", "cpu_seconds", "peak_rss_mib")


def mean_of(runs: Sequence[RunResult], metric: Metric) -> float | None:
    values = [metric.read(run) for run in runs]
    present = [value for value in values if value is not None]
    if not runs or len(present) != len(values):
        return None
    return statistics.fmean(present)


def summaries(runs: Sequence[RunResult]) -> dict[str, dict[str, float | None]]:
    """Scheduler -> metric key -> mean over that scheduler's runs."""
    by_scheduler: dict[str, list[RunResult]] = {}
    for run in runs:
        by_scheduler.setdefault(run.scheduler, []).append(run)
    return {
        name: {metric.key: mean_of(group, metric) for metric in METRICS}
        for name, group in by_scheduler.items()
    }


def ratios(summary: dict[str, dict[str, float | None]]) -> dict[str, float | None]:
    """Metric key -> ours/upstream; empty unless both schedulers ran."""
    ours = summary.get(SchedulerKind.OURS)
    upstream = summary.get(SchedulerKind.UPSTREAM)
    if ours is None or upstream is None:
        return {}
    result: dict[str, float | None] = {}
    for metric in METRICS:
        mine, theirs = ours[metric.key], upstream[metric.key]
        result[metric.key] = mine / theirs if mine is not None and theirs else None
    return result


def document(runs: Sequence[RunResult], context: dict[str, Any]) -> dict[str, Any]:
    """The JSON report: the context (workload, machine, command), every run,
    the means and the ratios."""
    summary = summaries(runs)
    return {
        **context,
        "metrics": {metric.key: {"label": metric.label, "unit": metric.unit} for metric in METRICS},
        "runs": [run.to_json() for run in runs],
        "summary": summary,
        "ratios": ratios(summary),
        "headline_ratios": list(HEADLINE_RATIOS),
        "all_correct": all(run.correct for run in runs),
    }


def _cell(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(runs: Sequence[RunResult]) -> str:
    """Means per scheduler side by side, with the ratio, then one line per run."""
    summary = summaries(runs)
    names = [str(name) for name in (SchedulerKind.OURS, SchedulerKind.UPSTREAM) if name in summary]
    names += [name for name in summary if name not in names]
    ratio = ratios(summary)
    headers = ["metric", "unit", *names, *(["ours/upstream"] if ratio else [])]
    rows = []
    for metric in METRICS:
        row = [
            metric.label,
            metric.unit,
            *(_cell(summary[name][metric.key], metric.digits) for name in names),
        ]
        if ratio:
            row.append(_cell(ratio[metric.key], 2))
        rows.append(row)
    rows.append(
        [
            "correct (all bound, none overcommitted)",
            "",
            *(
                "yes" if all(r.correct for r in runs if r.scheduler == name) else "NO"
                for name in names
            ),
            *([""] if ratio else []),
        ]
    )
    lines = _aligned([headers, *rows])
    if any(run.throughput is None for run in runs):
        lines.append(
            "(-: a run ended before its second 1 s tick, so it has no throughput sample; "
            "compare measured pods / wall time)"
        )
    lines.append("")
    lines.extend(_run_lines(runs))
    return "\n".join(lines)


def _aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for index, row in enumerate(rows):
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1])]
        cells += [cell.rjust(width) for cell, width in zip(row[2:], widths[2:], strict=True)]
        lines.append("  ".join(cells).rstrip())
        if index == 0:
            lines.append("  ".join("-" * width for width in widths))
    return lines


def _run_lines(runs: Sequence[RunResult]) -> list[str]:
    lines = []
    for run in runs:
        stats = run.throughput
        average = "no sample" if stats is None else f"avg {stats.average:.1f} pods/s"
        verdict = "ok" if run.correct else _problems(run)
        lines.append(
            f"round {run.round_index + 1} {run.scheduler}: "
            f"{run.measured_bound}/{run.workload.pods} bound in {run.wall_seconds:.1f}s "
            f"({average}; {len(stats.samples) if stats else 0} samples), "
            f"CPU {run.cpu_seconds:.1f}s, RSS {run.peak_rss_bytes / MIB:.0f} MiB: {verdict}"
        )
    return lines


def _problems(run: RunResult) -> str:
    found = []
    if not run.completed:
        found.append("timed out")
    if run.unbound_pods:
        found.append(f"{run.unbound_pods} pods unbound")
    if run.overcommitted_nodes:
        found.append(f"{len(run.overcommitted_nodes)} nodes overcommitted")
    return "FAILED: " + ", ".join(found)
