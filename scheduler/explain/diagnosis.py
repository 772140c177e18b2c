"""A pod's last scheduling attempt, and how ``explain`` prints it.

Input is the attempt record the scheduling cycle writes
(``scheduler.cycle.reporting.failed_attempt``/``scheduled_attempt``): from
the daemon's ``/debug/pods`` it holds the first failing plugin of a sample
of at most 8 nodes; a simulated run (``explain --snapshot``) adds every
Filter plugin's verdict on every node (``matrix``).

Ordering, "closest to fitting first": fewer failing plugins, then only
resolvable failures (``Unschedulable``: freeing resources could help)
before ``UnschedulableAndUnresolvable``, then fewer reasons, then the name.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

UNRESOLVABLE = "UnschedulableAndUnresolvable"


@dataclass(frozen=True)
class Verdict:
    plugin: str
    code: str
    reasons: tuple[str, ...]


@dataclass
class Diagnosis:
    pod: str
    result: str
    message: str = ""
    cycle: int | None = None
    node: str = ""
    reasons: dict[str, int] = field(default_factory=dict)
    rejected_nodes: int = 0
    nodes: dict[str, list[Verdict]] = field(default_factory=dict)
    top_scores: list[dict[str, Any]] = field(default_factory=list)
    complete: bool = False  # every node and plugin (simulated), not a sample
    # Node -> resource -> how much more the pod requests than is free (simulated).
    shortfall: dict[str, dict[str, str]] = field(default_factory=dict)

    def closest_first(self) -> list[tuple[str, list[Verdict]]]:
        def key(item: tuple[str, list[Verdict]]) -> tuple[int, int, int, str]:
            name, verdicts = item
            unresolvable = sum(1 for v in verdicts if v.code == UNRESOLVABLE)
            reasons = sum(len(v.reasons) for v in verdicts)
            return (len(verdicts), unresolvable, reasons, name)

        return sorted(self.nodes.items(), key=key)

    def by_reason(self) -> dict[str, list[str]]:
        """Reason -> the nodes (of those shown) that gave it, most common first."""
        groups: dict[str, list[str]] = {}
        for name, verdicts in self.nodes.items():
            for verdict in verdicts:
                for reason in verdict.reasons or (f"rejected by {verdict.plugin}",):
                    groups.setdefault(reason, []).append(name)
        return dict(sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])))


def from_attempts(pod: str, attempts: Sequence[Mapping[str, Any]]) -> Diagnosis:
    """The last of the attempts ``/debug/pods`` returns."""
    if not attempts:
        return Diagnosis(pod, "NoAttempt", "no scheduling attempt recorded")
    last = attempts[-1]
    nodes = {
        str(name): [
            Verdict(
                str(verdict.get("plugin") or ""),
                str(verdict.get("code") or ""),
                tuple(str(r) for r in verdict.get("reasons") or ()),
            )
        ]
        for name, verdict in (last.get("nodes") or {}).items()
    }
    return Diagnosis(
        pod=pod,
        result=str(last.get("result") or ""),
        message=str(last.get("message") or ""),
        cycle=last.get("cycle"),
        node=str(last.get("node") or ""),
        reasons={str(k): int(v) for k, v in (last.get("reasons") or {}).items()},
        rejected_nodes=int(last.get("rejectedNodes") or 0),
        nodes=nodes,
        top_scores=list(last.get("topScores") or ()),
    )


def _columns(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: str) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    return [
        indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in (headers, *rows)
    ]


def render(diagnosis: Diagnosis) -> str:
    cycle = f" (cycle {diagnosis.cycle})" if diagnosis.cycle is not None else ""
    lines = [f"pod {diagnosis.pod}: {diagnosis.result}{cycle}"]
    if diagnosis.node:
        lines.append(f"  on node {diagnosis.node}")
    if diagnosis.message:
        lines.append(f"  {diagnosis.message}")
    if diagnosis.reasons:
        lines += ["", f"nodes by reason ({diagnosis.rejected_nodes} rejected):"]
        lines += [f"  {count:>5}  {reason}" for reason, count in diagnosis.reasons.items()]
    if diagnosis.nodes:
        scope = "every node, every Filter plugin" if diagnosis.complete else "a sample of nodes"
        lines += ["", f"verdicts grouped by reason ({scope}):"]
        for reason, names in diagnosis.by_reason().items():
            lines.append(f"  {reason}: {', '.join(names)}")
        rows: list[tuple[str, ...]] = []
        for name, verdicts in diagnosis.closest_first():
            short = diagnosis.shortfall.get(name) or {}
            amounts = ", ".join(f"{k} {v}" for k, v in short.items())
            for index, verdict in enumerate(verdicts):
                first = index == 0
                rows.append(
                    (
                        name if first else "",
                        str(len(verdicts)) if first else "",
                        verdict.plugin,
                        verdict.code,
                        "; ".join(verdict.reasons),
                        amounts if first else "",
                    )
                )
        headers: tuple[str, ...] = ("NODE", "FAILING", "PLUGIN", "CODE", "LACKS", "SHORT BY")
        if not diagnosis.shortfall:
            headers, rows = headers[:-1], [row[:-1] for row in rows]
        lines += ["", "closest to fitting first (what each node lacks):"]
        lines += _columns(headers, rows, "  ")
    if diagnosis.top_scores:
        lines += ["", "best scores:"]
        for score in diagnosis.top_scores:
            plugins = ", ".join(f"{k}={v}" for k, v in (score.get("plugins") or {}).items())
            lines.append(f"  {score.get('node')}: {score.get('total')} ({plugins})")
    return "\n".join(lines) + "\n"
