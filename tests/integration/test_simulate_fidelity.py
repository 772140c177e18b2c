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
``PYSCHEDULER_FIDELITY_SEEDS`` asks for more. The AutoscaleEnforcer scenario
(VM pods sized by their VirtualMachines, the plugin's ConfigMap in the
snapshot) is compared the same way.
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

from plugins.autoscale_enforcer import CONFIG_MAP_KEY
from plugins.autoscale_enforcer.plugin import NAME as ENFORCER
from scheduler.simulate.cli import main as simulate_main
from tests.integration.conftest import Cluster, NodePool
from tests.support.builders import make_config_map, make_node, make_pod, make_vm
from tests.support.differential import (
    Outcome,
    Outcomes,
    create_cluster_state,
    delete_cluster_state,
    delete_pods,
    disagreements,
)
from tests.support.kubeapi import condition, create_all, list_pods
from tests.support.neonvm import GROUP, VERSION, install_neonvm_crds
from tests.support.scheduler import running_scheduler, scheduler_config, unique_scheduler_name
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


# ------------------------------------------------------------ AutoscaleEnforcer
ENFORCER_CONFIG_NAMESPACE = "kube-system"


def _enforcer_scheduler_config(name: str, config_map: str) -> str:
    return scheduler_config(
        name,
        f"""  plugins:
    multiPoint:
      enabled:
      - name: {ENFORCER}
  pluginConfig:
  - name: {ENFORCER}
    args:
      configMapName: {config_map}
      agentPort: 0
""",
    )


def _enforcer_config(name: str) -> str:
    return json.dumps(
        {
            "nodeDefaults": {
                "cpu": {"watermark": 0.9, "system": "0"},
                "memory": {"watermark": 0.9, "system": "0"},
                "computeUnit": {"vCPUs": 1, "mem": 1},
            },
            "memBlockSize": "1Gi",
            "schedulerName": name,
            "doMigration": False,
        }
    )


async def test_simulate_matches_the_live_scheduler_with_autoscale_enforcer(
    control_plane: Cluster,
    kube: client.ApiClient,
    namespace: str,
    nodes: NodePool,
    tmp_path: Path,
) -> None:
    """VM pods sized by their VirtualMachine's current use, over two nodes:
    three fit, a fourth (``big``) does not; the same through simulate
    (snapshot with the ConfigMap and the VirtualMachines) and live."""
    plane = control_plane.require_plane()
    core = client.CoreV1Api(kube)
    custom = client.CustomObjectsApi(kube)
    await install_neonvm_crds(kube)
    name = unique_scheduler_name()
    config_map = f"enforcer-{secrets.token_hex(3)}"
    body = make_config_map(
        config_map, ENFORCER_CONFIG_NAMESPACE, {CONFIG_MAP_KEY: _enforcer_config(name)}
    )
    del body["metadata"]["uid"]
    await core.create_namespaced_config_map(ENFORCER_CONFIG_NAMESPACE, body)
    config = tmp_path / "config.yaml"
    config.write_text(_enforcer_scheduler_config(name, config_map))
    try:
        for index in range(2):
            await nodes.create(
                make_node(f"vm{index}").capacity(cpu="4", memory="4Gi", pods="20").obj()
            )
        sizes = {"a": (1, 4, 2), "b": (1, 4, 2), "c": (1, 4, 2), "big": (1, 4, 3)}
        for vm, size in sizes.items():
            vm_body = make_vm(vm, namespace).cpus(*size).memory_slots(*size).obj()
            vm_body["spec"]["schedulerName"] = name
            await custom.create_namespaced_custom_object(
                GROUP, VERSION, namespace, "virtualmachines", vm_body
            )
            pod = make_pod(f"{vm}-pod", namespace).scheduler(name).label("vm.neon.tech/name", vm)
            await core.create_namespaced_pod(namespace, pod.obj())
        path = await asyncio.to_thread(
            kubectl_snapshot,
            plane.binary,
            plane.kubeconfig,
            tmp_path / "snapshot.yaml",
            "nodes,pods,configmaps,virtualmachines",
        )
        sim = await simulated(path, config, 1, namespace)
        assert len(sim) == len(sizes)
        assert any(o.node for o in sim.values())
        assert any(not o.node for o in sim.values())
        async with running_scheduler(
            plane.kubeconfig, name, config_text=config.read_text(), rng=random.Random(1)
        ):
            settled = await eventually(
                lambda: _settled(core, namespace, len(sizes)),
                timeout=SETTLE_TIMEOUT,
                what="every VM pod bound or told why not",
            )
        live = {pod["metadata"]["name"]: _live_outcome(pod) for pod in settled}
    finally:
        await core.delete_namespaced_config_map(config_map, ENFORCER_CONFIG_NAMESPACE)
    found = disagreements(sim, live) + node_differences(sim, live)
    assert not found, "\n".join(line.replace("upstream", "live") for line in found)
