"""Turning runs into the comparison (pure): every figure as min / median /
max over the rounds, the ratios between schedulers, a Markdown table and the
JSON document.

A ratio ``a/b`` is the ratio of the medians; its range runs from ``min a /
max b`` to ``max a / min b``. When the two schedulers' ranges overlap, the
rounds cannot tell them apart and the ratio is marked "no difference". A
figure missing from any run of a scheduler (no throughput sample in a very
short run, no attempt histogram for the ceiling) has no spread and no ratio.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bench.results import RunResult
from bench.schedulers import SchedulerKind

MIB = 2**20
NO_DIFFERENCE = "no difference"


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
    Metric("pods_per_second", "rate, measured pods / clock", "pods/s", lambda r: r.pods_per_second),
    Metric("cpu_ms_per_pod", "scheduler CPU per pod", "ms", lambda r: r.cpu_ms_per_pod, 2),
    Metric(
        "control_plane_cpu_ms_per_pod",
        "etcd + apiserver CPU per pod",
        "ms",
        lambda r: r.control_plane_cpu_ms_per_pod,
        2,
    ),
    Metric("peak_rss_mib", "scheduler peak RSS", "MiB", lambda r: r.peak_rss_bytes / MIB),
    Metric(
        "snapshot_cpu_ms_per_pod",
        "snapshot update CPU per pod (profiled)",
        "ms",
        lambda r: r.snapshot_cpu_ms_per_pod,
        3,
    ),
    Metric(
        "informer_events_per_pod",
        "informer event handler calls per pod (each scheduler's own labels)",
        "",
        lambda r: r.informer_events_per_pod,
        2,
    ),
    Metric(
        "decode_cpu_ms_per_pod",
        "watch decoding CPU per pod (profiled)",
        "ms",
        lambda r: r.decode_cpu_ms_per_pod,
        3,
    ),
    Metric(
        "informer_cpu_ms_per_pod",
        "informer CPU per pod, decoding and handlers (profiled)",
        "ms",
        lambda r: r.informer_cpu_ms_per_pod,
        3,
    ),
    Metric("attempt_p50_ms", "attempt duration p50", "ms", lambda r: r.attempt_p50_ms, 2),
    Metric("attempt_p99_ms", "attempt duration p99", "ms", lambda r: r.attempt_p99_ms, 2),
    Metric("algorithm_p50_ms", "algorithm duration p50", "ms", lambda r: r.algorithm_p50_ms, 2),
    Metric("algorithm_p99_ms", "algorithm duration p99", "ms", lambda r: r.algorithm_p99_ms, 2),
    Metric(
        "throughput_average", "throughput Average (1 s samples)", "pods/s", _throughput("average")
    ),
    Metric("throughput_p50", "throughput Perc50", "pods/s", _throughput("p50")),
    Metric("throughput_p90", "throughput Perc90", "pods/s", _throughput("p90")),
    Metric("throughput_p99", "throughput Perc99", "pods/s", _throughput("p99")),
    Metric("wall_seconds", "clock, measured pods", "s", lambda r: r.wall_seconds),
    Metric("startup_seconds", "start to first bind (backlog)", "s", lambda r: r.startup_seconds),
    Metric("cpu_seconds", "scheduler CPU, whole run", "s", lambda r: r.cpu_seconds, 2),
    Metric(
        "settle_seconds",
        "settling after the clock (CPU and writes counted)",
        "s",
        lambda r: r.settle_seconds,
    ),
    Metric(
        "scheduler_writes_per_pod",
        "API writes by the scheduler per pod",
        "",
        lambda r: r.scheduler_writes_per_pod,
        2,
    ),
    Metric(
        "bench_cpu_seconds_measured",
        "harness CPU while measuring",
        "s",
        lambda r: r.bench_cpu_seconds_measured,
        2,
    ),
)
BY_KEY = {metric.key: metric for metric in METRICS}
HEADLINE = (
    "pods_per_second",
    "cpu_ms_per_pod",
    "control_plane_cpu_ms_per_pod",
    "peak_rss_mib",
    "snapshot_cpu_ms_per_pod",
    "informer_events_per_pod",
    "decode_cpu_ms_per_pod",
    "informer_cpu_ms_per_pod",
    "attempt_p50_ms",
    "attempt_p99_ms",
)
ORDER = tuple(str(kind) for kind in SchedulerKind)
RATIO_PAIRS = (
    (SchedulerKind.OURS, SchedulerKind.UPSTREAM),
    (SchedulerKind.OURS, SchedulerKind.CEILING),
    (SchedulerKind.UPSTREAM, SchedulerKind.CEILING),
    (SchedulerKind.OURS, SchedulerKind.CEILING_EVENTS),
    (SchedulerKind.UPSTREAM, SchedulerKind.CEILING_EVENTS),
    (SchedulerKind.OURS, SchedulerKind.UPSTREAM_DEFAULT),
)


@dataclass(frozen=True)
class Spread:
    low: float
    median: float
    high: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        """Min, median and max of ``values`` (at least one)."""
        return cls(min(values), statistics.median(values), max(values))

    def overlaps(self, other: Spread) -> bool:
        return self.low <= other.high and other.low <= self.high

    def to_json(self) -> dict[str, float]:
        return {"min": self.low, "median": self.median, "max": self.high}


@dataclass(frozen=True)
class Ratio:
    value: float
    low: float
    high: float
    no_difference: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "ratio": self.value,
            "min": self.low,
            "max": self.high,
            "verdict": NO_DIFFERENCE if self.no_difference else "different",
        }


def spread_of(runs: Sequence[RunResult], metric: Metric) -> Spread | None:
    values = [metric.read(run) for run in runs]
    present = [value for value in values if value is not None]
    if not runs or len(present) != len(values):
        return None
    return Spread.of(present)


def by_scheduler(runs: Sequence[RunResult]) -> dict[str, list[RunResult]]:
    """Runs grouped by scheduler, in ``SchedulerKind`` order."""
    grouped: dict[str, list[RunResult]] = {}
    for run in sorted(runs, key=lambda r: ORDER.index(r.scheduler)):
        grouped.setdefault(run.scheduler, []).append(run)
    return grouped


def spreads(runs: Sequence[RunResult]) -> dict[str, dict[str, Spread | None]]:
    """Scheduler -> metric key -> its spread over that scheduler's runs."""
    return {
        name: {metric.key: spread_of(group, metric) for metric in METRICS}
        for name, group in by_scheduler(runs).items()
    }


def ratio(mine: Spread | None, theirs: Spread | None) -> Ratio | None:
    if mine is None or theirs is None or theirs.median == 0 or theirs.low <= 0:
        return None
    return Ratio(
        mine.median / theirs.median,
        mine.low / theirs.high,
        mine.high / theirs.low,
        mine.overlaps(theirs),
    )


def ratios(summary: dict[str, dict[str, Spread | None]]) -> dict[str, dict[str, Ratio | None]]:
    """``"a/b"`` -> metric key -> ratio, for each pair of RATIO_PAIRS that ran."""
    found: dict[str, dict[str, Ratio | None]] = {}
    for mine, theirs in RATIO_PAIRS:
        if mine in summary and theirs in summary:
            found[f"{mine}/{theirs}"] = {
                metric.key: ratio(summary[mine][metric.key], summary[theirs][metric.key])
                for metric in METRICS
            }
    return found


def document(runs: Sequence[RunResult], context: dict[str, Any]) -> dict[str, Any]:
    """The JSON report: the context (workload, mode, machine, commit, command),
    every run, the spreads and the ratios."""
    summary = spreads(runs)
    return {
        **context,
        "metrics": {metric.key: {"label": metric.label, "unit": metric.unit} for metric in METRICS},
        "headline": list(HEADLINE),
        "runs": [run.to_json() for run in runs],
        "summary": {
            name: {key: None if s is None else s.to_json() for key, s in metrics.items()}
            for name, metrics in summary.items()
        },
        "ratios": {
            pair: {key: None if r is None else r.to_json() for key, r in metrics.items()}
            for pair, metrics in ratios(summary).items()
        },
        "all_correct": all(run.correct for run in runs),
    }


def _number(value: float, digits: int) -> str:
    return f"{value:.{digits}f}"


def spread_cell(value: dict[str, float] | None, digits: int) -> str:
    if value is None:
        return "-"
    median = _number(value["median"], digits)
    if value["min"] == value["max"]:
        return median
    return f"{median} [{_number(value['min'], digits)}-{_number(value['max'], digits)}]"


def ratio_cell(value: dict[str, Any] | None) -> str:
    if value is None:
        return "-"
    cell = f"{value['ratio']:.2f}"
    return f"{cell} ({NO_DIFFERENCE})" if value["verdict"] == NO_DIFFERENCE else cell


def markdown_table(doc: dict[str, Any], keys: Sequence[str] | None = None) -> str:
    """Median [min-max] per scheduler, then each ratio, one row per metric;
    given ``keys`` (the headline), rows no scheduler has are left out, and
    always those of metrics the document predates."""
    names = list(doc["summary"])
    pairs = list(doc["ratios"])
    rows = [
        ["metric", *names, *pairs],
        ["---", *(["---:"] * (len(names) + len(pairs)))],
    ]
    for key in keys or [metric.key for metric in METRICS]:
        if any(key not in doc["summary"][name] for name in names):
            continue
        if keys and all(doc["summary"][name][key] is None for name in names):
            continue
        metric = BY_KEY[key]
        label = f"{metric.label} ({metric.unit})" if metric.unit else metric.label
        rows.append(
            [
                label,
                *(spread_cell(doc["summary"][name][key], metric.digits) for name in names),
                *(ratio_cell(doc["ratios"][pair][key]) for pair in pairs),
            ]
        )
    return "\n".join("| " + " | ".join(row) + " |" for row in rows)


def profile_lines(doc: dict[str, Any]) -> list[str]:
    """The top functions by own CPU of each profiled scheduler's first run."""
    lines: list[str] = []
    seen: set[str] = set()
    for run in doc["runs"]:
        if not run.get("profile_top") or run["scheduler"] in seen:
            continue
        seen.add(run["scheduler"])
        decoding = run.get("decode_cpu_seconds")
        lines.append(
            f"- {run['scheduler']} (round {run['round_index'] + 1}; snapshot update "
            f"{run['snapshot_cpu_seconds']:.3f} s"
            + ("" if decoding is None else f", watch decoding {decoding:.3f} s")
            + f" of {run['cpu_seconds_measured']:.2f} s CPU):"
        )
        lines.append("  - own time:")
        lines += [f"    - {share:.1%} `{name}`" for name, share in run["profile_top"]]
        lines.append("  - cumulative (with callees):")
        lines += [f"    - {share:.1%} `{name}`" for name, share in run["profile_cumulative"]]
    return lines


def run_lines(doc: dict[str, Any]) -> list[str]:
    lines = []
    for run in doc["runs"]:
        verdict = "ok" if run["correct"] else _problems(run)
        lines.append(
            f"round {run['round_index'] + 1} {run['scheduler']}: "
            f"{run['measured_bound']}/{run['workload']['pods']} bound in "
            f"{run['wall_seconds']:.1f}s ({run['pods_per_second']:.1f} pods/s), "
            f"CPU {run['cpu_seconds_measured']:.2f}s measured, "
            f"RSS {run['peak_rss_bytes'] / MIB:.0f} MiB" + _churn_part(run) + f": {verdict}"
        )
    return lines


def _churn_part(run: dict[str, Any]) -> str:
    if run.get("status_updates") is None:
        return ""
    events = sum((run.get("informer_events") or {}).values())
    return (
        f", kubelet {run['status_updates']} status updates and {run['deleted_pods']} "
        f"deletions, {events} informer events"
    )


def _problems(run: dict[str, Any]) -> str:
    found = []
    if not run["completed"]:
        found.append("timed out")
    if run["unbound_pods"]:
        found.append(f"{run['unbound_pods']} pods unbound")
    if run["overcommitted_nodes"]:
        found.append(f"{len(run['overcommitted_nodes'])} nodes overcommitted")
    return "FAILED: " + ", ".join(found)
