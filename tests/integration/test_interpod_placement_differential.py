"""Placements against upstream kube-scheduler, one pod at a time: with the
default profiles (PodTopologySpread and InterPodAffinity scoring among the
other plugins), whenever our best node is strictly better than the second
best, upstream picks the same node; unschedulable pods get the same message.

Pods are created one by one, each after the previous one is bound (or told
why not, and then deleted), so both schedulers see the same cluster for every
pod, and the pods may select each other (``self_selecting``): spreading and
affinity among the pods being scheduled are compared too. Every pod prefers
the nodes by rank with distinct weights, so exact ties are rare; a tie broken
differently would make the two clusters diverge, so comparison stops there
for that seed. 3 seeds x 25 pods; ``PYSCHEDULER_INTERPOD_PLACEMENT_SEEDS``
asks for more. Pods labelled ``role=web`` belong to a ReplicaSet and
``role=db`` ones are selected by a Service, so pods without constraints of
their own get the system default spread constraints. (Halving
PodTopologySpread's topology weight, or dropping the default constraints,
makes it fail.)"""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from scheduler.app.root import SchedulerApp
from tests.support.cluster import Cluster
from tests.support.differential import (
    OURS_PROFILE,
    UPSTREAM_PROFILE,
    ours_config,
    upstream_runner,
)
from tests.support.interpod_workloads import created_nodes, generate, run_namespace
from tests.support.kubeapi import condition, read_pod
from tests.support.scheduler import running_scheduler
from tests.support.wait import eventually
from tests.support.workloads import Workload

Obj = dict[str, Any]
SEEDS = int(os.environ.get("PYSCHEDULER_INTERPOD_PLACEMENT_SEEDS", "3"))
PODS = int(os.environ.get("PYSCHEDULER_INTERPOD_PLACEMENT_PODS", "25"))
HTTP_NOT_FOUND = 404
RANK = "interpod-diff/rank"


@dataclass(frozen=True)
class Placement:
    node: str  # "" when unschedulable
    message: str
    decisive: bool  # our best score was strictly better than the second


async def _settle(core: client.CoreV1Api, namespace: str, name: str) -> Obj:
    async def settled() -> Obj | None:
        pod = await read_pod(core, namespace, name)
        if pod["spec"].get("nodeName"):
            return pod
        found = condition(pod, "PodScheduled")
        return pod if found and found.get("status") == "False" and found.get("message") else None

    return await eventually(settled, timeout=60, what=f"{namespace}/{name} bound or told why not")


async def _delete(core: client.CoreV1Api, namespace: str, name: str) -> None:
    await core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)

    async def gone() -> bool:
        try:
            await core.read_namespaced_pod(name, namespace)
        except client.ApiException as error:
            return error.status == HTTP_NOT_FOUND
        return False

    await eventually(gone, timeout=60, what=f"{namespace}/{name} deleted")


def _decisive(app: SchedulerApp | None, namespace: str, name: str) -> bool:
    if app is None:
        return True
    attempts = app.attempt_log.attempts(namespace, name) or []
    scheduled = [a for a in attempts if a.get("result") == "Scheduled"]
    if not scheduled:
        return True
    top = scheduled[-1].get("topScores") or []
    return len(top) < 2 or top[0]["total"] > top[1]["total"]


async def _place_one_by_one(
    core: client.CoreV1Api,
    workload: Workload,
    namespace: str,
    *,
    scheduler_name: str,
    app: SchedulerApp | None,
    apps: client.AppsV1Api,
) -> list[Placement]:
    placements = []
    owner = await _controllers(apps, core, namespace)
    for raw in workload.pods:
        name = raw["metadata"]["name"]
        metadata = {**raw["metadata"], "namespace": namespace}
        if metadata.get("labels", {}).get("role") == "web":
            metadata["ownerReferences"] = [owner]
        body = {
            **raw,
            "metadata": metadata,
            "spec": {**raw["spec"], "schedulerName": scheduler_name},
        }
        await core.create_namespaced_pod(namespace, body)
        pod = await _settle(core, namespace, name)
        node = pod["spec"].get("nodeName") or ""
        message = "" if node else (condition(pod, "PodScheduled") or {}).get("message", "")
        placements.append(Placement(node, message, _decisive(app, namespace, name)))
        if not node:  # it must not bind later, when the two runs' timings differ
            await _delete(core, namespace, name)
    return placements


async def _controllers(apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str) -> Obj:
    """A ReplicaSet selecting ``role=web`` (its pods get it as controlling
    owner) and a Service selecting ``role=db``: pods without constraints of
    their own get the system default spread constraints from them. Returns the
    owner reference for the ReplicaSet's pods."""
    template = {
        "metadata": {"labels": {"role": "web"}},
        "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]},
    }
    replica_set = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"role": "web"}}, "template": template},
    }
    created = await apps.create_namespaced_replica_set(namespace, replica_set)
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "db"},
        "spec": {"selector": {"role": "db"}, "ports": [{"port": 80}]},
    }
    await core.create_namespaced_service(namespace, service)
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "web",
        "uid": created.metadata.uid,
        "controller": True,
    }


Runner = Callable[[], contextlib.AbstractAsyncContextManager[SchedulerApp | None]]


def _ours(kubeconfig: Path) -> Runner:
    @contextlib.asynccontextmanager
    async def run() -> AsyncIterator[SchedulerApp | None]:
        async with running_scheduler(kubeconfig, OURS_PROFILE, config_text=ours_config()) as app:
            yield app

    return run


def _upstream(plane: Any, workdir: Path) -> Runner:
    runner = upstream_runner(plane, workdir)

    @contextlib.asynccontextmanager
    async def run() -> AsyncIterator[SchedulerApp | None]:
        async with runner():
            yield None

    return run


def compare(workload: Workload, ours: list[Placement], upstream: list[Placement]) -> list[str]:
    """Disagreements up to the first tie that the two broke differently."""
    problems = []
    for raw, mine, theirs in zip(workload.pods, ours, upstream, strict=True):
        name = raw["metadata"]["name"]
        if mine.node == theirs.node:
            if mine.message != theirs.message:
                problems.append(f"{name}: ours {mine.message!r}, upstream {theirs.message!r}")
            continue
        if not mine.node or not theirs.node or mine.decisive:
            mine_said, theirs_said = mine.node or mine.message, theirs.node or theirs.message
            problems.append(f"{name}: ours {mine_said!r}, upstream {theirs_said!r}")
        break  # the clusters differ from here on
    return problems


def ranked(workload: Workload) -> Workload:
    """Nodes ranked by a label that every pod prefers with a distinct weight per
    rank (NodeAffinity scoring), so that exact ties between nodes, which the two
    schedulers break at random, are rare."""
    nodes = copy.deepcopy(workload.nodes)
    for rank, node in enumerate(nodes):
        node["metadata"]["labels"][RANK] = str(rank)
    pods = []
    for raw in workload.pods:
        pod = copy.deepcopy(raw)
        preferred = (
            pod["spec"]
            .setdefault("affinity", {})
            .setdefault("nodeAffinity", {})
            .setdefault("preferredDuringSchedulingIgnoredDuringExecution", [])
        )
        for rank in range(len(nodes)):
            term = {"matchExpressions": [{"key": RANK, "operator": "In", "values": [str(rank)]}]}
            preferred.append({"weight": 3 * rank + 1, "preference": term})
        pods.append(pod)
    return Workload(workload.seed, nodes, workload.placed, pods)


@pytest.mark.timeout(max(600, 240 * SEEDS))
async def test_placements_agree_with_upstream_kube_scheduler(
    control_plane: Cluster, kube: client.ApiClient, tmp_path: Path
) -> None:
    plane = control_plane.require_plane()
    core = client.CoreV1Api(kube)
    runners = {OURS_PROFILE: _ours(plane.kubeconfig), UPSTREAM_PROFILE: _upstream(plane, tmp_path)}
    failures: list[str] = []
    compared = 0
    for seed in range(1, 1 + SEEDS):
        workload = ranked(generate(100 + seed, PODS, self_selecting=True))
        placements: dict[str, list[Placement]] = {}
        async with created_nodes(core, workload.nodes):
            for profile, runner in runners.items():
                async with run_namespace(core, workload.placed) as namespace, runner() as app:
                    placements[profile] = await _place_one_by_one(
                        core,
                        workload,
                        namespace,
                        scheduler_name=profile,
                        app=app,
                        apps=client.AppsV1Api(kube),
                    )
        problems = compare(workload, placements[OURS_PROFILE], placements[UPSTREAM_PROFILE])
        failures.extend(f"seed {seed}: {line}" for line in problems)
        compared += sum(p.decisive and bool(p.node) for p in placements[OURS_PROFILE])
    assert not failures, "\n".join(failures)
    assert compared > 0, "no decisive placement to compare"
