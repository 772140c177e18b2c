"""Fidelity: ``pyscheduler simulate`` decides as the live scheduler does.

Per seed, the differential harness's generated workload (``tests.support.
workloads``: nodes with labels, GPUs, taints and cordons; pods placed by
hand; pods with requests, selectors, affinity, host ports, tolerations and
gates) is created on the real control plane with every pod to place already
there. The cluster is then snapshotted with ``kubectl get nodes,pods -A -o
yaml`` and simulated with ``--seed``; afterwards the live scheduler (the
same composition, in-process, its RNG seeded alike) schedules the real pods.

Both start from the same list, in the same order, so with the same seed the
whole run is order independent here: every pod must end the same way (bound
or not, with the same ``PodScheduled`` reason and message, word for word)
and on the same node. 3 seeds x 40 pods by default;
``PYSCHEDULER_FIDELITY_SEEDS`` asks for more.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import random
import secrets
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from scheduler.simulate.cli import main as simulate_main
from tests.integration.conftest import Cluster
from tests.support.differential import (
    Outcome,
    Outcomes,
    create_cluster_state,
    delete_cluster_state,
    delete_pods,
    disagreements,
)
from tests.support.kubeapi import condition, create_all, list_pods
from tests.support.scheduler import running_scheduler, scheduler_config
from tests.support.snapshot import kubectl_snapshot
from tests.support.wait import eventually
from tests.support.workloads import generate

SEEDS = int(os.environ.get("PYSCHEDULER_FIDELITY_SEEDS", "3"))
PODS = 40
SETTLE_TIMEOUT = 120.0
Obj = dict[str, Any]


def _ours(pod: Obj, namespace: str, scheduler_name: str) -> Obj:
    return {
        **pod,
        "metadata": {**pod["metadata"], "namespace": namespace},
        "spec": {**pod["spec"], "schedulerName": scheduler_name},
    }


def _live_outcome(pod: Obj) -> Outcome:
    node = pod["spec"].get("nodeName") or ""
    if node:
        return Outcome(node, "", "")
    found = condition(pod, "PodScheduled") or {}
    return Outcome("", found.get("reason", ""), found.get("message", ""))


async def _settled(core: client.CoreV1Api, namespace: str, count: int) -> list[Obj] | None:
    pods = await list_pods(core, namespace)
    if len(pods) < count:
        return None
    for pod in pods:
        found = condition(pod, "PodScheduled") or {}
        if not pod["spec"].get("nodeName") and not found.get("message"):
            return None
    return pods


async def simulated(path: Path, config: Path, seed: int, namespace: str) -> Outcomes:
    """The CLI as a user runs it (in a thread: it runs its own event loop)."""
    out = io.StringIO()
    argv = [str(path), "--config", str(config), "--seed", str(seed), "-o", "json", "--quiet"]
    code = await asyncio.to_thread(simulate_main, argv, out)
    assert code == 0
    outcomes = {}
    for pod in json.loads(out.getvalue())["pods"]:
        pod_namespace, _, name = pod["pod"].partition("/")
        if pod_namespace == namespace:
            reason = "" if pod["node"] else pod["result"]
            outcomes[name] = Outcome(pod["node"], reason, pod["message"])
    return outcomes


def node_differences(sim: Outcomes, live: Outcomes) -> list[str]:
    return [
        f"{name}: simulate bound it to {sim[name].node}, the live scheduler to {live[name].node}"
        for name in sorted(set(sim) & set(live))
        if sim[name].node != live[name].node
    ]


@pytest.mark.timeout(max(600, 120 * SEEDS))
async def test_simulate_matches_the_live_scheduler(
    control_plane: Cluster, kube: client.ApiClient, tmp_path: Path
) -> None:
    plane = control_plane.require_plane()
    core = client.CoreV1Api(kube)
    failures: list[str] = []
    for seed in range(1, SEEDS + 1):
        workload = generate(seed, PODS)
        tag = secrets.token_hex(3)
        placed_ns, ours_ns, name = f"placed-{tag}", f"fidelity-{tag}", f"pysched-fid-{tag}"
        config = tmp_path / f"config-{seed}.yaml"
        config.write_text(scheduler_config(name))
        for namespace in (placed_ns, ours_ns):
            await core.create_namespace({"metadata": {"name": namespace}})
        try:
            await create_cluster_state(core, workload, placed_ns)
            await create_all(
                lambda body, ns=ours_ns: core.create_namespaced_pod(ns, body),
                [_ours(pod, ours_ns, name) for pod in workload.pods],
            )
            path = tmp_path / f"snapshot-{seed}.yaml"
            await asyncio.to_thread(kubectl_snapshot, plane.binary, plane.kubeconfig, path)
            sim = await simulated(path, config, seed, ours_ns)
            assert len(sim) == PODS
            # Not vacuous: pods land on several nodes and some are refused.
            assert len({o.node for o in sim.values() if o.node}) > 1
            assert any(not o.node for o in sim.values())
            async with running_scheduler(
                plane.kubeconfig, name, config_text=config.read_text(), rng=random.Random(seed)
            ):
                settled = await eventually(
                    lambda ns=ours_ns: _settled(core, ns, PODS),
                    timeout=SETTLE_TIMEOUT,
                    what=f"every pod of {ours_ns} bound or told why not",
                )
            live = {pod["metadata"]["name"]: _live_outcome(pod) for pod in settled}
            await delete_pods(core, ours_ns)
        finally:
            await delete_cluster_state(core, workload, placed_ns)
            for namespace in (placed_ns, ours_ns):
                await core.delete_namespace(namespace, propagation_policy="Background")
        found = disagreements(sim, live) + node_differences(sim, live)
        failures.extend(f"seed {seed}: {line}".replace("upstream", "live") for line in found)
    assert not failures, "\n".join(failures)
