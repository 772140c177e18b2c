"""Run one generated workload (``tests.support.workloads``) with one scheduler
on a real control plane, and compare schedulers pod by pod.

Per seed: the nodes and the already-placed pods are created once; then each
scheduler in turn is started fresh (so its first list is the current state),
gets the same pods in a namespace of its own, and is stopped once every pod is
settled (bound, or ``PodScheduled=False`` with a message); its pods are then
deleted before the next scheduler starts. The outcome of a pod is its node
(or none) and its condition's reason and message.

Upstream runs ``kcp kube-scheduler`` with its default profile minus the
plugins this scheduler's default profile does not have yet (so the two
profiles are the same list; as plugins land, they are compared too).

``hard_constraint_violations`` checks every bound pod against what the
scheduler must never break: nodeSelector and required node affinity, NoSchedule
and NoExecute taints, cordons, host ports, and cpu, memory, pods and extended
resources on each node.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio import client

from bench.schedulers import RunningScheduler, SchedulerKind, http_session, wait_ready
from localcluster import ControlPlane
from localcluster.cluster import free_port
from plugins.node_ports import fits_ports
from plugins.registry import DEFAULT_PLUGINS
from plugins.taint_toleration import find_untolerated_taint
from scheduler.framework import NodeInfo, Resource, Taint, parse_node, parse_pod
from tests.support.kubeapi import condition, create_all, list_pods
from tests.support.scheduler import running_scheduler
from tests.support.wait import eventually
from tests.support.workloads import Workload

Obj = dict[str, Any]

# Upstream v1.36 default profile (default_plugins.go plus the gated additions
# on by default: DynamicResources before DefaultPreemption, NodeDeclaredFeatures).
UPSTREAM_DEFAULT_PLUGINS = (
    "SchedulingGates",
    "PrioritySort",
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "PodTopologySpread",
    "InterPodAffinity",
    "DynamicResources",
    "DefaultPreemption",
    "NodeResourcesBalancedAllocation",
    "ImageLocality",
    "DefaultBinder",
    "NodeDeclaredFeatures",
)
OURS_PROFILE = "pyscheduler-diff"
UPSTREAM_PROFILE = "default-scheduler"
SETTLE_TIMEOUT = 120.0
CORDON = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


@dataclass(frozen=True)
class Outcome:
    node: str
    reason: str
    message: str

    @property
    def scheduled(self) -> bool:
        return bool(self.node)

    def describe(self) -> str:
        return f"bound to {self.node}" if self.node else f"{self.reason}: {self.message}"


Outcomes = dict[str, Outcome]


def missing_plugins() -> list[str]:
    """Upstream default plugins this scheduler's default profile lacks."""
    ours = {name for name, _ in DEFAULT_PLUGINS}
    return [name for name in UPSTREAM_DEFAULT_PLUGINS if name not in ours]


def upstream_config(kubeconfig: Path) -> str:
    profile: Obj = {"schedulerName": UPSTREAM_PROFILE}
    disabled = missing_plugins()
    if disabled:
        profile["plugins"] = {"multiPoint": {"disabled": [{"name": name} for name in disabled]}}
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": 500, "burst": 1000},
        "leaderElection": {"leaderElect": False},
        "profiles": [profile],
    }
    return yaml.safe_dump(config, sort_keys=False)


def ours_config() -> str:
    return f"""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  qps: 500
  burst: 1000
profiles:
- schedulerName: {OURS_PROFILE}
"""


Runner = Callable[[], contextlib.AbstractAsyncContextManager[None]]


def ours_runner(kubeconfig: Path, feature_gates: str = "") -> Runner:
    @contextlib.asynccontextmanager
    async def run() -> AsyncIterator[None]:
        async with running_scheduler(
            kubeconfig, OURS_PROFILE, config_text=ours_config(), feature_gates=feature_gates
        ):
            yield

    return run


def upstream_runner(plane: ControlPlane, workdir: Path, feature_gates: str = "") -> Runner:
    @contextlib.asynccontextmanager
    async def run() -> AsyncIterator[None]:
        config = workdir / "upstream-scheduler.yaml"
        config.write_text(upstream_config(plane.kubeconfig))
        port = free_port()
        process = plane.start_scheduler(
            config,
            extra_args=[
                f"--secure-port={port}",
                "--bind-address=127.0.0.1",
                "--authorization-always-allow-paths=/healthz,/readyz,/livez",
                *([f"--feature-gates={feature_gates}"] if feature_gates else []),
            ],
        )
        scheduler = RunningScheduler(SchedulerKind.UPSTREAM, process, f"https://127.0.0.1:{port}")
        try:
            async with http_session() as session:
                await wait_ready(session, scheduler, timeout=60)
            yield
        finally:
            process.stop()

    return run


async def create_cluster_state(core: client.CoreV1Api, workload: Workload, namespace: str) -> None:
    """The workload's nodes, and its placed pods in ``namespace`` (which must exist)."""
    await create_all(core.create_node, workload.nodes)
    await create_all(
        lambda body: core.create_namespaced_pod(namespace, body),
        (_in_namespace(pod, namespace) for pod in workload.placed),
    )


async def delete_cluster_state(core: client.CoreV1Api, workload: Workload, namespace: str) -> None:
    await delete_pods(core, namespace)
    for node in workload.nodes:
        with contextlib.suppress(client.ApiException):
            await core.delete_node(node["metadata"]["name"])


async def delete_pods(core: client.CoreV1Api, namespace: str) -> None:
    await core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)

    async def gone() -> bool:
        return not await list_pods(core, namespace)

    await eventually(gone, timeout=60, what=f"pods of {namespace} deleted")


async def run_workload(
    core: client.CoreV1Api,
    workload: Workload,
    namespace: str,
    scheduler_name: str,
    runner: Runner,
) -> tuple[Outcomes, list[Obj]]:
    """Schedule the workload's pods in ``namespace`` (which must exist) with a
    fresh scheduler; the outcomes and the settled pods (then deleted)."""
    pods = [_in_namespace(pod, namespace, scheduler_name=scheduler_name) for pod in workload.pods]
    async with runner():
        await create_all(lambda body: core.create_namespaced_pod(namespace, body), pods)
        settled = await eventually(
            lambda: _settled(core, namespace, len(pods)),
            timeout=SETTLE_TIMEOUT,
            what=f"every pod of {namespace} bound or told why not",
        )
    outcomes = {pod["metadata"]["name"]: _outcome(pod) for pod in settled}
    await delete_pods(core, namespace)
    return outcomes, settled


async def _settled(core: client.CoreV1Api, namespace: str, count: int) -> list[Obj] | None:
    pods = await list_pods(core, namespace)
    if len(pods) < count:
        return None
    for pod in pods:
        if pod["spec"].get("nodeName"):
            continue
        found = condition(pod, "PodScheduled")
        if not found or found.get("status") != "False" or not found.get("message"):
            return None
    return pods


def _outcome(pod: Obj) -> Outcome:
    node = pod["spec"].get("nodeName") or ""
    if node:
        return Outcome(node, "", "")
    found = condition(pod, "PodScheduled") or {}
    return Outcome("", found.get("reason", ""), found.get("message", ""))


def _in_namespace(pod: Obj, namespace: str, *, scheduler_name: str = "") -> Obj:
    body = {**pod, "metadata": {**pod["metadata"], "namespace": namespace}}
    if scheduler_name:
        body["spec"] = {**pod["spec"], "schedulerName": scheduler_name}
    return body


def disagreements(ours: Outcomes, upstream: Outcomes) -> list[str]:
    """One line per pod whose fate or message differs."""
    lines = []
    for name in sorted(set(ours) | set(upstream)):
        mine, theirs = ours.get(name), upstream.get(name)
        if mine is None or theirs is None:
            lines.append(f"{name}: only in {'ours' if theirs is None else 'upstream'}")
            continue
        if mine.scheduled != theirs.scheduled or (
            not mine.scheduled and (mine.reason, mine.message) != (theirs.reason, theirs.message)
        ):
            lines.append(f"{name}:\n  ours:     {mine.describe()}\n  upstream: {theirs.describe()}")
    return lines


def hard_constraint_violations(
    nodes: Iterable[Obj], pods: Iterable[Obj], placed: Iterable[Obj] = ()
) -> list[str]:
    """What the scheduled pods break: selectors, taints, cordons, ports and,
    with the ``placed`` pods (bound by hand: only their ports and requests
    count), resources."""
    infos = {node.name: NodeInfo(node) for node in map(parse_node, nodes)}
    for raw in placed:
        pod = parse_pod(raw)
        if pod.node_name in infos:
            infos[pod.node_name].add_pod(pod)
    problems = []
    for raw in pods:
        pod = parse_pod(raw)
        info = infos.get(pod.node_name)
        if info is None or info.node is None:
            continue
        node = info.node
        where = f"{pod.key} on {node.name}"
        if not pod.required_affinity.matches(node.name, node.labels):
            problems.append(f"{where}: node affinity/selector not satisfied")
        if find_untolerated_taint(node.taints, pod.tolerations) is not None:
            problems.append(f"{where}: untolerated taint")
        if node.unschedulable and not any(t.tolerates(CORDON) for t in pod.tolerations):
            problems.append(f"{where}: node cordoned")
        if not fits_ports(pod.host_ports, info.used_ports):
            problems.append(f"{where}: host port conflict")
        info.add_pod(pod)
    for info in infos.values():
        problems.extend(_overcommitted(info))
    return problems


def _overcommitted(info: NodeInfo) -> list[str]:
    used: Resource = info.requested
    allocatable = info.allocatable
    over = []
    if used.milli_cpu > allocatable.milli_cpu:
        over.append("cpu")
    if used.memory > allocatable.memory:
        over.append("memory")
    if len(info.pods) > allocatable.allowed_pods:
        over.append("pods")
    over.extend(
        name for name, value in used.scalar.items() if value > allocatable.scalar.get(name, 0)
    )
    return [f"{info.name}: overcommitted {', '.join(over)}"] if over else []


@dataclass
class SeedResult:
    ours: Outcomes
    upstream: Outcomes
    disagreements: list[str]
    violations: list[str]


async def compare_seed(
    core: client.CoreV1Api,
    workload: Workload,
    namespaces: tuple[str, str, str],
    runners: tuple[Runner, Runner],
) -> SeedResult:
    """Both outcomes, their disagreements and the hard-constraint violations
    for one workload; ``namespaces`` = (placed pods, ours, upstream), all existing."""
    placed_ns, ours_ns, upstream_ns = namespaces
    ours_run, upstream_run = runners
    await create_cluster_state(core, workload, placed_ns)
    try:
        placed = await list_pods(core, placed_ns)
        ours, ours_pods = await run_workload(core, workload, ours_ns, OURS_PROFILE, ours_run)
        upstream, upstream_pods = await run_workload(
            core, workload, upstream_ns, UPSTREAM_PROFILE, upstream_run
        )
    finally:
        await delete_cluster_state(core, workload, placed_ns)
    violations = [
        f"{who}: {problem}"
        for who, pods in (("ours", ours_pods), ("upstream", upstream_pods))
        for problem in hard_constraint_violations(workload.nodes, pods, placed)
    ]
    return SeedResult(ours, upstream, disagreements(ours, upstream), violations)
