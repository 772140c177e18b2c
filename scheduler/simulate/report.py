"""What a simulation found, and its three renderings.

``build_report`` reads the run's final objects: each pod of the profiles'
scheduler names that was pending at the start (where it landed, or the
``PodScheduled`` condition's reason and message exactly as the run wrote
them), the pods the run deleted (preemption victims), claims the run
allocated, and each node's requests against its allocatable.

Renderings: ``table`` (for people), ``as_json`` (the report as data) and
``as_yaml`` (the final snapshot, a ``v1 List`` another run can start from).
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson
from pydantic.alias_generators import to_camel

from scheduler.framework.objects import parse_node, parse_pod
from scheduler.kube.resources import NODES, PODS, RESOURCE_CLAIMS
from scheduler.simulate.memory import MemoryCluster, object_key
from scheduler.simulate.snapshot import dump_list

Raw = dict[str, Any]
# The JSON report's type, so a consumer can tell its version.
REPORT_API_VERSION = "simulate.pyscheduler.io/v1alpha1"
REPORT_KIND = "SimulationReport"
POD_SCHEDULED = "PodScheduled"
SCHEDULED = "Scheduled"
PENDING = "Pending"


@dataclass(frozen=True)
class PodResult:
    pod: str
    scheduler: str
    node: str
    result: str
    message: str = ""
    nominated_node: str = ""


@dataclass(frozen=True)
class NodeUsage:
    node: str
    cpu_requested_milli: int
    cpu_allocatable_milli: int
    memory_requested: int
    memory_allocatable: int
    pods: int
    pods_allocatable: int
    unschedulable: bool = False


@dataclass(frozen=True)
class Allocation:
    claim: str
    node: str
    devices: list[str]
    reserved_for: list[str]


@dataclass
class Report:
    pods: list[PodResult] = field(default_factory=list)
    victims: list[str] = field(default_factory=list)
    allocations: list[Allocation] = field(default_factory=list)
    nodes: list[NodeUsage] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    # Pending pods left alone: schedulerName -> count (no profile of that name).
    skipped: dict[str, int] = field(default_factory=dict)

    @property
    def scheduled(self) -> int:
        return sum(1 for p in self.pods if p.result == SCHEDULED)

    @property
    def unplaced(self) -> int:
        return len(self.pods) - self.scheduled


def pending_keys(objects: Iterable[Raw], scheduler_names: Collection[str]) -> list[str]:
    """Pods of ours that have no node yet, in input order."""
    keys = []
    for obj in objects:
        if obj.get("kind") != PODS.kind:
            continue
        pod = parse_pod(obj)
        if not pod.node_name and pod.scheduler_name in scheduler_names and not pod.terminal:
            keys.append(object_key(obj))
    return keys


def skipped_pending(objects: Iterable[Raw], scheduler_names: Collection[str]) -> dict[str, int]:
    """Pending pods of other schedulers, by schedulerName: what the run left
    alone because no profile has that name."""
    counts: dict[str, int] = {}
    for obj in objects:
        if obj.get("kind") != PODS.kind:
            continue
        pod = parse_pod(obj)
        if not pod.node_name and pod.scheduler_name not in scheduler_names and not pod.terminal:
            counts[pod.scheduler_name] = counts.get(pod.scheduler_name, 0) + 1
    return dict(sorted(counts.items()))


def _skipped_line(skipped: Mapping[str, int]) -> str:
    total = sum(skipped.values())
    names = ", ".join(f"{name or '(none)'}: {count}" for name, count in skipped.items())
    return (
        f"{total} pending pod{'s' if total != 1 else ''} skipped: no profile of this"
        f" configuration has their schedulerName ({names}); give --config a profile of"
        " that name to place them"
    )


def _condition(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == POD_SCHEDULED:
            return condition  # type: ignore[no-any-return]
    return {}


def _allocation(claim: Mapping[str, Any]) -> Allocation:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results") or ()
    devices = [f"{r.get('driver')}/{r.get('pool')}/{r.get('device')}" for r in results]
    node = ""
    for term in (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or ():
        for expression in term.get("matchFields") or ():
            if expression.get("key") == "metadata.name" and expression.get("values"):
                node = str(expression["values"][0])
    reserved = [str(r.get("name")) for r in (claim.get("status") or {}).get("reservedFor") or ()]
    return Allocation(object_key(claim), node, devices, reserved)


def build_report(
    cluster: MemoryCluster,
    initial: Sequence[Raw],
    pending: Sequence[str],
    stats: Mapping[str, Any],
) -> Report:
    report = Report(stats=dict(stats))
    for key in pending:
        pod = cluster.get(PODS, key)
        if pod is None:
            report.pods.append(PodResult(key, "", "", "Deleted"))
            continue
        parsed = parse_pod(pod)
        condition = _condition(pod)
        if parsed.node_name:
            result, message = SCHEDULED, ""
        else:
            result = str(condition.get("reason") or PENDING)
            message = str(condition.get("message") or "")
        report.pods.append(
            PodResult(
                key,
                parsed.scheduler_name,
                parsed.node_name,
                result,
                message,
                parsed.nominated_node_name,
            )
        )
    bound_before = {
        object_key(o)
        for o in initial
        if o.get("kind") == PODS.kind and (o.get("spec") or {}).get("nodeName")
    }
    report.victims = [
        object_key(o)
        for o in cluster.deleted
        if o.get("kind") == PODS.kind and object_key(o) in bound_before
    ]
    allocated_before = {
        object_key(o)
        for o in initial
        if o.get("kind") == RESOURCE_CLAIMS.kind and (o.get("status") or {}).get("allocation")
    }
    report.allocations = [
        _allocation(claim)
        for claim in cluster.objects(RESOURCE_CLAIMS)
        if (claim.get("status") or {}).get("allocation")
        and object_key(claim) not in allocated_before
    ]
    report.nodes = node_usage(cluster.objects(NODES), cluster.objects(PODS))
    return report


def node_usage(nodes: Iterable[Raw], pods: Iterable[Raw]) -> list[NodeUsage]:
    requested: dict[str, list[int]] = {}
    for raw in pods:
        pod = parse_pod(raw)
        if pod.node_name and not pod.terminal:
            totals = requested.setdefault(pod.node_name, [0, 0, 0])
            totals[0] += pod.requests.milli_cpu
            totals[1] += pod.requests.memory
            totals[2] += 1
    usage = []
    for raw in nodes:
        node = parse_node(raw)
        cpu, memory, count = requested.get(node.name, [0, 0, 0])
        usage.append(
            NodeUsage(
                node.name,
                cpu,
                node.allocatable.milli_cpu,
                memory,
                node.allocatable.memory,
                count,
                node.allocatable.allowed_pods,
                node.unschedulable,
            )
        )
    return usage


# ----------------------------------------------------------------- renderings
def _percent(used: int, total: int) -> str:
    return f"{100 * used // total}%" if total else "-"


def _cpu(milli: int) -> str:
    return f"{milli // 1000}" if milli % 1000 == 0 else f"{milli}m"


def _memory(size: int) -> str:
    for unit, factor in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if size >= factor:
            return f"{size / factor:.1f}{unit}".replace(".0" + unit, unit)
    return str(size)


def _columns(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = []
    for row in (headers, *rows):
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
        lines.append("  ".join(cells).rstrip())
    return lines


def table(report: Report) -> str:
    lines: list[str] = []
    if report.pods:
        lines += _columns(
            ("POD", "NODE", "RESULT", "MESSAGE"),
            [(p.pod, p.node or "-", p.result, p.message) for p in report.pods],
        )
    else:
        lines.append("no pending pods to place")
    if report.skipped:
        lines += ["", _skipped_line(report.skipped)]
    if report.victims:
        lines += ["", "preempted (deleted) pods:"] + [f"  {v}" for v in report.victims]
    if report.allocations:
        lines += ["", "claim allocations:"]
        lines += _columns(
            ("CLAIM", "NODE", "DEVICES", "RESERVED FOR"),
            [
                (a.claim, a.node or "-", ",".join(a.devices) or "-", ",".join(a.reserved_for))
                for a in report.allocations
            ],
        )
    if report.nodes:
        lines.append("")
        lines += _columns(
            ("NODE", "CPU REQ/ALLOC", "CPU%", "MEM REQ/ALLOC", "MEM%", "PODS", ""),
            [
                (
                    n.node,
                    f"{_cpu(n.cpu_requested_milli)}/{_cpu(n.cpu_allocatable_milli)}",
                    _percent(n.cpu_requested_milli, n.cpu_allocatable_milli),
                    f"{_memory(n.memory_requested)}/{_memory(n.memory_allocatable)}",
                    _percent(n.memory_requested, n.memory_allocatable),
                    f"{n.pods}/{n.pods_allocatable}",
                    "cordoned" if n.unschedulable else "",
                )
                for n in report.nodes
            ],
        )
    unschedulable = len(report.pods) - report.scheduled
    lines += ["", f"{report.scheduled} scheduled, {unschedulable} not scheduled"]
    return "\n".join(lines) + "\n"


def _camel(item: Any) -> dict[str, Any]:
    return {to_camel(key): value for key, value in asdict(item).items()}


def as_json(report: Report) -> str:
    """The report as a typed document: ``apiVersion``/``kind`` and camelCase
    keys throughout, like the Kubernetes objects it describes."""
    body = {
        "apiVersion": REPORT_API_VERSION,
        "kind": REPORT_KIND,
        "pods": [_camel(p) for p in report.pods],
        "victims": report.victims,
        "allocations": [_camel(a) for a in report.allocations],
        "nodes": [_camel(n) for n in report.nodes],
        "skipped": report.skipped,
        "summary": {"scheduled": report.scheduled, "notScheduled": report.unplaced},
        "stats": report.stats,
    }
    return orjson.dumps(body, option=orjson.OPT_INDENT_2).decode() + "\n"


def as_yaml(cluster: MemoryCluster, passthrough: Iterable[Raw]) -> str:
    objects: list[Raw] = []
    for resource in cluster.resources():
        objects.extend(cluster.objects(resource))
    objects.extend(passthrough)
    return dump_list(objects)
