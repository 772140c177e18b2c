"""What every chaos scenario shares: the burst, the fault-in-flight check, and
the verdict (nothing lost, nothing bound twice, nothing overcommitted, the
cache comparer clean), recorded for the summary table.

Sizes: the default run uses ``SMALL`` (quick, still faulting mid-burst);
``make chaos`` sets ``PYSCHEDULER_CHAOS_FULL=1`` for ``FULL`` (500 pods on 50
nodes, the issue's bar).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import Awaitable, Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.support.builders import make_node, make_pod
from tests.support.cluster import Cluster, NodePool
from tests.support.faultproxy import FaultProxy
from tests.support.kubeapi import condition, list_pods, read_json
from tests.support.podrequests import imports_scheduler, node_view_differences, overcommitted
from tests.support.wait import ConditionTimeout, eventually

FULL_ENV = "PYSCHEDULER_CHAOS_FULL"
# The fit error, then what PostFilter (preemption) adds, as upstream writes it.
UNSCHEDULABLE = re.compile(
    r"^0/\d+ nodes are available: ([^.]+, )?\d+ Insufficient cpu(, [^.]+)?\.( .*)?$"
)
NODE_CPU, POD_CPU = "4", "300m"  # 13 pods fit a node; bursts fill about 3/4 of the nodes
TOO_BIG_CPU = "5"  # fits no node: must end Unschedulable with the message above
VM_LABEL = "vm.neon.tech/name"


@dataclass(frozen=True)
class Size:
    pods: int
    nodes: int
    too_big: int  # extra pods that fit nowhere

    @property
    def settle_timeout(self) -> float:
        return 60.0 + self.pods * 0.6


SMALL = Size(pods=120, nodes=12, too_big=2)
FULL = Size(pods=500, nodes=50, too_big=5)


def size() -> Size:
    return FULL if os.environ.get(FULL_ENV) else SMALL


@dataclass
class Outcome:
    """One row of the summary table."""

    scenario: str
    pods: int = 0
    faults: list[str] = field(default_factory=list)
    lost: int = -1
    double_bound: int = -1
    overcommitted: int = -1
    differences: int = -1
    note: str = ""
    # What proves the fault did something (proxy counters, metrics, restarts);
    # empty means not observed and fails ``verdict``.
    observed: list[str] = field(default_factory=list)
    # The overcommit check, the Scheduled checks and the node comparison read
    # only the API's objects (tests/support/podrequests.py), never the
    # scheduler's parsing: computed by ``verdict`` (``NodeComparison``).
    independent: bool = False

    def row(self) -> tuple[str, ...]:
        return (
            self.scenario,
            str(self.pods),
            ", ".join(self.faults) or "-",
            str(self.lost),
            str(self.double_bound),
            str(self.overcommitted),
            str(self.differences),
            self.note or "-",
            ", ".join(self.observed) or "no",
            "yes" if self.independent else "no",
        )


HEADER = (
    "scenario",
    "pods",
    "faults",
    "lost",
    "double-bound",
    "overcommitted",
    "comparer diffs",
    "at the fault",
    "fault observed",
    "oracle independent",
)


def table(outcomes: Iterable[Outcome]) -> list[str]:
    rows = [HEADER, *(outcome.row() for outcome in outcomes)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return lines


# ------------------------------------------------------------------ the burst
class Burst:
    """Nodes and pods of one scenario, in ``namespace``, for scheduler ``name``."""

    def __init__(self, core: client.CoreV1Api, namespace: str, name: str, shape: Size) -> None:
        self.core = core
        self.namespace = namespace
        self.name = name
        self.size = shape
        self.fitting = [f"p{i:04d}" for i in range(shape.pods)]
        self.too_big = [f"big{i:02d}" for i in range(shape.too_big)]
        self.deleted: set[str] = set()
        # node name -> the proxy's bind count (``Kind.BIND`` seen) once it was deleted
        self.deleted_nodes: dict[str, int] = {}
        # pods (namespace/name) whose Bind call was already under way in the
        # scheduler when it saw their node deleted: sent before, not its fault
        self.sent_before_deletion: set[str] = set()
        # bound by a process killed before it could flush its events: no
        # Scheduled event is required of them (upstream loses those too)
        self.no_event_expected: set[str] = set()
        # fitting pods that are NeonVM VM pods (``vm.neon.tech/name`` = the pod's
        # name; the scenario creates the VMs): the AutoscaleEnforcer scenarios
        self.vm_pods: set[str] = set()

    async def create_nodes(
        self, pool: NodePool, count: int | None = None, prefix: str = "c"
    ) -> list[str]:
        names = []
        for index in range(self.size.nodes if count is None else count):
            body = make_node(f"{prefix}{index:03d}").capacity(
                cpu=NODE_CPU, memory="16Gi", pods="110"
            )
            names.append(await pool.create(body.obj()))
        return names

    def bodies(self) -> list[dict[str, Any]]:
        pods = [
            make_pod(name, self.namespace).scheduler(self.name).requests(cpu=POD_CPU, memory="64Mi")
            for name in self.fitting
        ]
        pods = [
            pod.label(VM_LABEL, name) if name in self.vm_pods else pod
            for pod, name in zip(pods, self.fitting, strict=True)
        ]
        pods += [
            make_pod(name, self.namespace).scheduler(self.name).requests(cpu=TOO_BIG_CPU)
            for name in self.too_big
        ]
        return [pod.obj() for pod in pods]

    def start(self, concurrency: int = 10) -> asyncio.Task[None]:
        """Create every pod in the background, retrying through API outages."""
        return asyncio.create_task(self._create_all(concurrency), name="create-burst")

    async def _create_all(self, concurrency: int) -> None:
        gate = asyncio.Semaphore(concurrency)

        async def one(body: dict[str, Any]) -> None:
            async with gate:
                await _retrying(lambda: self.core.create_namespaced_pod(self.namespace, body))

        await asyncio.gather(*(one(body) for body in self.bodies()))

    async def pods(self) -> list[dict[str, Any]]:
        return await _retrying(lambda: list_pods(self.core, self.namespace))

    async def bound_count(self) -> int:
        return sum(1 for pod in await self.pods() if pod["spec"].get("nodeName"))

    async def until_bound(self, count: int) -> int:
        async def enough() -> int | None:
            bound = await self.bound_count()
            return bound if bound >= count else None

        return await eventually(enough, timeout=120, what=f"{count} pods bound")

    async def delete(self, names: Iterable[str]) -> None:
        for pod in names:
            self.deleted.add(pod)
            await _retrying(
                lambda pod=pod: self.core.delete_namespaced_pod(
                    pod, self.namespace, grace_period_seconds=0
                )  # type: ignore[misc]
            )


async def _retrying(call: Callable[[], Awaitable[Any]], attempts: int = 120) -> Any:
    """``call``, retried while the API server is unreachable or answers 5xx;
    an AlreadyExists (a retried create that had landed) or NotFound (a
    retried delete) counts as done."""
    for attempt in range(attempts):
        try:
            return await call()
        except client.ApiException as error:
            if error.status in (404, 409):
                return None
            if error.status < 500 or attempt == attempts - 1:
                raise
        except (TimeoutError, OSError, client.rest.aiohttp.ClientError):  # type: ignore[attr-defined]
            if attempt == attempts - 1:
                raise
        await asyncio.sleep(0.5)
    return None


# ------------------------------------------------------- the moment of the fault
def in_flight(pending: int, binds: int, *, need_binds: bool = False) -> str:
    """Fails the scenario unless work was in flight when the fault hit (and,
    with ``need_binds``, unless binds were)."""
    if pending == 0 and binds == 0:
        raise AssertionError("fault too late: no pod pending and no bind in flight at the fault")
    if need_binds and binds == 0:
        raise AssertionError("fault too late: no bind in flight at the fault")
    return f"{pending} pending, {binds} binds in flight"


async def assert_in_flight(
    burst: Burst, proxy: FaultProxy | None = None, binds: int = 0, *, need_binds: bool = False
) -> str:
    """Right before a fault: pods of the burst that exist in the API and are
    still unbound (queued, or binding), or binds in flight (held by the proxy,
    or counted by the app: ``binds``, whichever is more). Pods not yet created
    do not count: the fault cannot have hit them."""
    binds = max(binds, len(proxy.binds_in_flight) if proxy is not None else 0)
    pods = await burst.pods()
    big = set(burst.too_big)
    pending = sum(
        1 for pod in pods if not pod["spec"].get("nodeName") and pod["metadata"]["name"] not in big
    )
    return in_flight(pending, binds, need_binds=need_binds)


def bound_after_deletion(burst: Burst, proxy: FaultProxy | None) -> list[str]:
    """Binds sent after the scheduler saw their node deleted that landed: a
    failure, as the pod can never run. A bind already in flight then is not
    the scheduler's to stop, and is not counted: one that reached the proxy
    before (``deleted_nodes``' mark), or one whose Bind call was under way in
    the scheduler though it reached the proxy later (its client was waiting
    for a connection: ``sent_before_deletion``)."""
    if proxy is None:
        return []
    found = []
    for node, mark in burst.deleted_nodes.items():
        found += [
            f"{record.pod}: bound to {node} after its deletion"
            for record in proxy.binds
            if record.node == node
            and record.status == 201
            and record.arrived > mark
            and record.pod not in burst.sent_before_deletion
        ]
    return found


# ------------------------------------------------------------------ the verdict
Comparer = Callable[[], Awaitable[dict[str, Any]]]


async def verdict(
    burst: Burst,
    outcome: Outcome,
    *,
    node_names: Callable[[], list[str]],
    comparer: Comparer,
    proxy: FaultProxy | None = None,
) -> None:
    """Wait until the burst settles, then fill ``outcome`` and assert that
    nothing was lost, bound twice or overcommitted and the cache comparer is
    clean."""
    core = burst.core
    expected = {name for name in [*burst.fitting, *burst.too_big] if name not in burst.deleted}
    outcome.pods = len(expected)

    def problems(pods: list[dict[str, Any]]) -> list[str]:
        by_name = {pod["metadata"]["name"]: pod for pod in pods}
        found = []
        for name in sorted(expected):
            pod = by_name.get(name)
            if pod is None:
                found.append(f"{name}: missing")
            elif name in burst.too_big:
                told = condition(pod, "PodScheduled") or {}
                message = str(told.get("message") or "")
                if pod["spec"].get("nodeName") or not (
                    told.get("reason") == "Unschedulable" and UNSCHEDULABLE.match(message)
                ):
                    found.append(f"{name}: not reported unschedulable ({told})")
            elif not pod["spec"].get("nodeName"):
                found.append(f"{name}: not bound")
        return found

    async def settled() -> bool:
        return not problems(await burst.pods())

    with contextlib.suppress(ConditionTimeout):
        await eventually(settled, timeout=burst.size.settle_timeout, what="the burst settled")
    pods = await burst.pods()
    lost = problems(pods)
    outcome.double_bound = len(proxy.double_bound()) if proxy is not None else 0

    listed = await read_json(await core.list_node(_preload_content=False))
    names = set(node_names())
    nodes = [node for node in listed["items"] if node["metadata"]["name"] in names]
    over = overcommitted(nodes, pods)
    outcome.overcommitted = len(over)
    lost += bound_after_deletion(burst, proxy)
    lost += await unscheduled_evidence(
        core, burst.namespace, pods, lambda: event_exempt(burst, proxy), proxy
    )
    outcome.lost = len(lost)

    last: dict[str, Any] = {}
    independent: list[str] = []
    compared = NodeComparison()

    async def clean() -> bool:
        nonlocal last, independent, compared
        last = await comparer()
        compared = await compare_node_views(core, last.get("cache"), names)
        independent = compared.differences
        return not last["differences"] and last.get("assumed", 0) == 0 and not independent

    with contextlib.suppress(ConditionTimeout):
        await eventually(clean, timeout=30, what="cache comparer clean")
    outcome.differences = (
        len(last.get("differences", ())) + (1 if last.get("assumed") else 0) + len(independent)
    )
    outcome.independent = compared.independent
    last["independent differences"] = independent

    assert outcome.observed, "the fault was not observed (no counter or metric moved)"
    assert not lost, f"lost pods: {lost[:10]}"
    assert outcome.double_bound == 0, f"double-bound: {proxy.double_bound() if proxy else {}}"
    assert not over, f"overcommitted: {over}"
    assert outcome.differences == 0, f"cache comparer: {last}"


@dataclass
class NodeComparison:
    """The independent comparison of the scheduler's node view with the API."""

    differences: list[str] = field(default_factory=list)
    nodes: int = 0  # nodes compared
    pods: int = 0  # pods counted on them

    @property
    def independent(self) -> bool:
        """The comparison ran, on nodes holding pods, with an oracle that
        imports nothing from the scheduler."""
        return self.nodes > 0 and self.pods > 0 and not imports_scheduler()


async def compare_node_views(
    core: client.CoreV1Api, cache: dict[str, Any] | None, names: Collection[str]
) -> NodeComparison:
    """The scheduler's view of the nodes ``names`` (its ``/debug/cache``
    report's ``cache`` part) against labels, taints, allocatable and summed
    requests computed here from the API's nodes and every pod of the cluster."""
    if cache is None:
        return NodeComparison(["the cache report carries no node view"])
    listed = await _retrying(lambda: core.list_node(_preload_content=False))
    nodes = [
        node for node in (await read_json(listed))["items"] if node["metadata"]["name"] in names
    ]
    everywhere = await _retrying(lambda: core.list_pod_for_all_namespaces(_preload_content=False))
    pods = (await read_json(everywhere))["items"]
    on_nodes = sum(1 for pod in pods if (pod.get("spec") or {}).get("nodeName") in names)
    return NodeComparison(node_view_differences(cache, nodes, pods), len(nodes), on_nodes)


def event_exempt(burst: Burst, proxy: FaultProxy | None) -> set[str]:
    """Bound pods that are owed no ``Scheduled`` event, as of now: those the
    scenario names (bound by a process it killed) and those the proxy bound
    itself before forwarding the scheduler's bind (its bind got 409, and
    upstream writes no event for a failed bind). Read when judging, not when
    the faults are cleared: a conflict decided just before the clear finishes
    after it."""
    first = {pod.split("/")[1] for pod in proxy.bound_first} if proxy is not None else set()
    return burst.no_event_expected | first


def event_diagnosis(proxy: FaultProxy | None, namespace: str, name: str) -> str:
    """What the proxy saw of a pod's binds and event writes, for the message
    of a missing event."""
    if proxy is None:
        return ""
    binds = [
        f"{record.status}{' injected' if record.injected else ''}"
        for record in proxy.binds
        if record.pod == f"{namespace}/{name}"
    ]
    writes = [str(status) for event, status in proxy.event_writes if event.startswith(f"{name}.")]
    return f" (binds: {', '.join(binds) or 'none'}; event creates: {', '.join(writes) or 'none'})"


async def unscheduled_evidence(
    core: client.CoreV1Api,
    namespace: str,
    pods: list[dict[str, Any]],
    exempt: Callable[[], Collection[str]] = frozenset,
    proxy: FaultProxy | None = None,
    *,
    timeout: float = 30.0,  # noqa: ASYNC109 - bounds the wait for events to appear
) -> list[str]:
    """Bound pods without ``PodScheduled=True`` or without a ``Scheduled``
    event naming them (events take a moment: waited for). ``exempt`` is asked
    on every look, so a pod that becomes exempt while waiting is not reported."""
    bound = {pod["metadata"]["name"]: pod for pod in pods if pod["spec"].get("nodeName")}
    found = [
        f"{name}: bound without PodScheduled=True"
        for name, pod in sorted(bound.items())
        if (condition(pod, "PodScheduled") or {}).get("status") != "True"
    ]
    missing: set[str] = set()

    async def events_written() -> bool:
        nonlocal missing
        listed = await _retrying(
            lambda: core.list_namespaced_event(namespace, _preload_content=False)
        )
        events = await read_json(listed)
        seen = {
            event["involvedObject"].get("name")
            for event in events.get("items", ())
            if event.get("reason") == "Scheduled"
        }
        missing = set(bound) - seen - set(exempt())
        return not missing

    with contextlib.suppress(ConditionTimeout):
        await eventually(
            events_written, timeout=timeout, what="a Scheduled event for each bound pod"
        )
    return found + [
        f"{name}: no Scheduled event{event_diagnosis(proxy, namespace, name)}"
        for name in sorted(missing)
    ]


def observed_counters(proxy: FaultProxy) -> list[str]:
    """The proxy's injected faults, per kind, as evidence for the table."""
    return [f"{kind} x{count}" for kind, count in sorted(proxy.injected.items()) if count]


@dataclass
class Scene:
    """What one scenario gets from the ``scene`` fixture (chaos/conftest.py)."""

    cluster: Cluster
    kube: client.ApiClient
    nodes: NodePool
    proxy: FaultProxy
    via_proxy: Path  # kubeconfig for the scheduler under test
    burst: Burst
    outcome: Outcome
    workdir: Path


# The rows of the summary table, kept on the pytest config (chaos/conftest.py).
OUTCOMES_KEY = pytest.StashKey[list[Outcome]]()


def drop_outcome(config: pytest.Config, row: Outcome) -> None:
    """Leave ``row`` out of the summary table (a scenario run that must fail)."""
    outcomes = config.stash.get(OUTCOMES_KEY, [])
    if row in outcomes:
        outcomes.remove(row)
