"""The AutoscaleEnforcer workload's results (pure): rounds to a document, a
Markdown table and its part of the results section in ``docs/benchmarks.md``.

One round (``AutoscaleRound``) is one fresh control plane and scheduler: VM
pods scheduled without agent traffic, then the storm and the other half. The
document keeps every round and, for each figure, min / median / max over the
rounds (``spread_cell`` prints them as the scheduler_perf tables do). There
is nothing to compare with: upstream kube-scheduler has no AutoscaleEnforcer,
so the table states the target next to the figures instead of a ratio.

Invariant: ``document`` is the only place a round becomes JSON, and
``markdown`` reads only that JSON, so the committed files and
``docs/benchmarks.md`` agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from bench.report import Spread, spread_cell

BENCHMARK = "pyscheduler AutoscaleEnforcer: VM pods scheduled while agents storm the plugin"
STEM = "autoscale"
TARGET_P99_MS = 5.0


@dataclass(frozen=True)
class AutoscaleRound:
    quiet_pods_per_second: float
    quiet_cpu_ms_per_pod: float  # the daemon and its agent process (from 2026-12-01)
    storm_pods_per_second: float
    storm_cpu_ms_per_pod: float  # serving the agents included
    requests_sent: int
    requests_per_second: float
    codes: dict[str, int]  # HTTP status (0: no answer) -> requests
    queued: int  # due while their agent still waited for an answer
    while_requests: int
    while_p50_ms: float
    while_p99_ms: float
    after_requests: int
    after_p50_ms: float
    after_p99_ms: float
    # of the CPU above, the agent process's (results before it existed: 0)
    quiet_agent_process_cpu_ms_per_pod: float = 0.0
    storm_agent_process_cpu_ms_per_pod: float = 0.0


# (key, label, digits), in table order
ROWS: tuple[tuple[str, str, int], ...] = (
    ("quiet_pods_per_second", "VM pods/s without agent traffic", 1),
    ("storm_pods_per_second", "VM pods/s during the storm", 1),
    ("quiet_cpu_ms_per_pod", "scheduler CPU per VM pod without agents (ms)", 2),
    ("storm_cpu_ms_per_pod", "scheduler CPU per VM pod during the storm, agents served (ms)", 2),
    ("quiet_agent_process_cpu_ms_per_pod", "of which the agent process, without agents (ms)", 2),
    ("storm_agent_process_cpu_ms_per_pod", "of which the agent process, during the storm (ms)", 2),
    ("requests_per_second", "agent requests/s sent", 0),
    ("while_p50_ms", "agent latency p50 while scheduling (ms)", 2),
    ("while_p99_ms", f"agent latency p99 while scheduling (ms; target <= {TARGET_P99_MS:g})", 2),
    ("after_p50_ms", "agent latency p50 after scheduling (ms)", 2),
    ("after_p99_ms", "agent latency p99 after scheduling (ms)", 2),
)


def document(context: dict[str, Any], rounds: Sequence[AutoscaleRound]) -> dict[str, Any]:
    """``context`` (command, commit, machine, sizes) with the rounds and their spreads."""
    if not rounds:
        raise ValueError("no round to report")
    runs = [asdict(one) for one in rounds]
    summary = {key: Spread.of([run[key] for run in runs]).to_json() for key, _, _ in ROWS}
    return {"benchmark": BENCHMARK, **context, "runs": runs, "summary": summary}


def describe(doc: dict[str, Any]) -> list[str]:
    machine = doc["machine"]
    return [
        f"- {doc['nodes']} nodes, {doc['vms']} VMs (half scheduled before the storm, half "
        f"during it), agents asking {doc['rate']} v5.0 requests/s; {len(doc['runs'])} "
        "round(s), each on a fresh control plane",
        f"- machine: {machine['cpus']} cores, {machine['platform']}, Python {machine['python']}",
        f"- commit `{doc['commit']}`, started {doc['started']}",
        f"- command: `{doc['command']}`",
    ]


def table(doc: dict[str, Any]) -> str:
    lines = ["| figure | median [min-max] |", "| --- | ---: |"]
    for key, label, digits in ROWS:
        if key in doc["summary"]:  # results from before a row existed lack it
            lines.append(f"| {label} | {spread_cell(doc['summary'][key], digits)} |")
    codes: dict[str, int] = {}
    for run in doc["runs"]:
        for code, count in run["codes"].items():
            codes[code] = codes.get(code, 0) + count
    answered = ", ".join(f"{code}: {count}" for code, count in sorted(codes.items()))
    lines.append(f"| agent answers by status, all rounds | {answered} |")
    return "\n".join(lines)


def results_section(doc: dict[str, Any], base: str) -> list[str]:
    """This workload's part of the results section; ``base`` is the results
    folder as the document links to it."""
    return [
        f"### AutoscaleEnforcer agent storm ([details]({base}/{STEM}.md))",
        "",
        *describe(doc),
        "",
        table(doc),
        "",
    ]


def markdown(doc: dict[str, Any]) -> str:
    rounds = [
        f"- round {index}: {run['quiet_pods_per_second']:.0f} / "
        f"{run['storm_pods_per_second']:.0f} VM pods/s; {run['requests_sent']} requests at "
        f"{run['requests_per_second']:.0f}/s, {run['queued']} queued behind their agent's "
        f"previous one; while scheduling {run['while_requests']} requests, p50 "
        f"{run['while_p50_ms']:.2f} / p99 {run['while_p99_ms']:.2f} ms; after "
        f"{run['after_requests']}, p50 {run['after_p50_ms']:.2f} / p99 {run['after_p99_ms']:.2f} ms"
        for index, run in enumerate(doc["runs"], 1)
    ]
    return "\n".join(
        [
            "# AutoscaleEnforcer: VM pods scheduled while agents storm the plugin",
            "",
            *describe(doc),
            "",
            "Median [min-max] over the rounds. pyscheduler only: upstream kube-scheduler "
            "has no AutoscaleEnforcer.",
            "",
            table(doc),
            "",
            "## Rounds",
            "",
            *rounds,
            "",
        ]
    )
