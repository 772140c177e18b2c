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
snapshot) is compared the same way, and so is the DynamicResources one (the
differential DRA test's claims plus claims from templates; the snapshot
holds the slices, classes, claims and templates), where each allocated
claim must also get the same devices.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import random
import secrets
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from plugins.autoscale_enforcer import CONFIG_MAP_KEY
from plugins.autoscale_enforcer.plugin import NAME as ENFORCER
from scheduler.simulate.cli import main as simulate_main
from tests.integration.test_differential_dra import Topology, topology
from tests.support.builders import make_config_map, make_node, make_pod, make_vm
from tests.support.cluster import Cluster, NodePool
from tests.support.differential import (
    Outcome,
    Outcomes,
    create_cluster_state,
    delete_cluster_state,
    delete_pods,
    disagreements,
)
from tests.support.drabuilders import Obj, make_claim, pod_uses_claim
from tests.support.kubeapi import condition, create_all, list_pods, read_json
from tests.support.neonvm import GROUP, VERSION, enforcer_config, install_neonvm_crds
from tests.support.scheduler import running_scheduler, scheduler_config, unique_scheduler_name
from tests.support.snapshot import kubectl_snapshot
from tests.support.wait import eventually
from tests.support.workloads import generate

SEEDS = int(os.environ.get("PYSCHEDULER_FIDELITY_SEEDS", "3"))
PODS = 40
SETTLE_TIMEOUT = 120.0


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
        config_map, ENFORCER_CONFIG_NAMESPACE, {CONFIG_MAP_KEY: enforcer_config(name)}
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


# ------------------------------------------------------------ DynamicResources
DRA_NODES = 3
DRA_SEED = 7
TEMPLATE_PODS = {"tpl-small": 5, "tpl-big": 2}
PLAIN_PODS = 3
DRA_SNAPSHOT_KINDS = "nodes,pods,resourceslices,deviceclasses,resourceclaims,resourceclaimtemplates"
# claim name -> (node, devices as driver/pool/device, pods it is reserved for)
Allocations = dict[str, tuple[str, list[str], list[str]]]


def _template(name: str, namespace: str, claim: Obj) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": claim["spec"]},
    }


def _dra_workload(
    devices: Topology, namespace: str, scheduler_name: str
) -> tuple[list[Obj], list[Obj], list[Obj]]:
    """(claims, claim templates, pods): the differential DRA test's claims,
    one pod each; pods whose claims come from templates (one small device,
    one big device), more of them than there are devices left; pods
    without claims."""
    claims, templates, pods = [], [], []
    for pod_name, claim in devices.claims():
        claim["metadata"]["namespace"] = namespace
        claim["metadata"].pop("uid")
        claims.append(claim)
        pod = make_pod(pod_name, namespace).scheduler(scheduler_name).obj()
        pods.append(pod_uses_claim(pod, "gpu", claim["metadata"]["name"]))
    for prefix, device_class in (("tpl-small", devices.small), ("tpl-big", devices.big)):
        claim = make_claim(prefix).request("r", device_class).obj()
        templates.append(_template(prefix, namespace, claim))
        for index in range(TEMPLATE_PODS[prefix]):
            pod = make_pod(f"{prefix}-{index}", namespace).scheduler(scheduler_name).obj()
            pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": prefix}]
            pods.append(pod)
    for index in range(PLAIN_PODS):
        pods.append(make_pod(f"plain-{index}", namespace).scheduler(scheduler_name).obj())
    return claims, templates, pods


def _live_allocation(claim: Obj) -> tuple[str, list[str], list[str]]:
    status = claim.get("status") or {}
    allocation = status.get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results") or ()
    node = ""
    for term in (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or ():
        for expression in term.get("matchFields") or ():
            if expression.get("key") == "metadata.name" and expression.get("values"):
                node = expression["values"][0]
    devices = [f"{r['driver']}/{r['pool']}/{r['device']}" for r in results]
    return node, devices, [r["name"] for r in status.get("reservedFor") or ()]


async def _simulated_allocations(
    path: Path, config: Path, seed: int, namespace: str
) -> Allocations:
    out = io.StringIO()
    argv = [str(path), "--config", str(config), "--seed", str(seed), "-o", "json", "--quiet"]
    code = await asyncio.to_thread(simulate_main, argv, out)
    assert code == 0
    found: Allocations = {}
    for allocation in json.loads(out.getvalue())["allocations"]:
        claim_namespace, _, name = allocation["claim"].partition("/")
        if claim_namespace == namespace:
            found[name] = (allocation["node"], allocation["devices"], allocation["reservedFor"])
    return found


async def _live_allocations(api: client.ResourceV1Api, namespace: str) -> Allocations:
    listed = await read_json(
        await api.list_namespaced_resource_claim(namespace, _preload_content=False)
    )
    return {
        claim["metadata"]["name"]: _live_allocation(claim)
        for claim in listed["items"]
        if (claim.get("status") or {}).get("allocation")
    }


async def _claims_generated(core: client.CoreV1Api, namespace: str) -> bool:
    """The resourceclaim controller has made every template pod's claim."""
    for pod in await list_pods(core, namespace):
        wanted = {
            entry["name"]
            for entry in pod["spec"].get("resourceClaims") or ()
            if entry.get("resourceClaimTemplateName")
        }
        made = {
            entry["name"]
            for entry in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
            if entry.get("resourceClaimName")
        }
        if wanted - made:
            return False
    return True


@pytest.mark.timeout(600)
async def test_simulate_matches_the_live_scheduler_with_dynamic_resources(
    control_plane: Cluster,
    kube: client.ApiClient,
    namespace: str,
    nodes: NodePool,
    tmp_path: Path,
) -> None:
    """The differential DRA workload (counts, selectors, matchAttribute,
    prioritized lists, device taints) plus claims from templates, all pods
    pending before either run: per pod the same outcome, message and node,
    per claim the same devices, through simulate (snapshot with the slices,
    classes, claims and templates) and live, with the same seed."""
    plane = control_plane.require_plane()
    core = client.CoreV1Api(kube)
    api = client.ResourceV1Api(kube)
    name = unique_scheduler_name()
    config = tmp_path / "config.yaml"
    config.write_text(scheduler_config(name))
    names = [await nodes.create(make_node(f"dra-fid-{i}").obj()) for i in range(DRA_NODES)]
    async with topology(api, names, "fid") as devices:
        claims, templates, pods = _dra_workload(devices, namespace, name)
        for claim in claims:
            await api.create_namespaced_resource_claim(namespace, claim)
        for template in templates:
            await api.create_namespaced_resource_claim_template(namespace, template)
        for pod in pods:
            await core.create_namespaced_pod(namespace, pod)
        await eventually(
            lambda: _claims_generated(core, namespace),
            timeout=SETTLE_TIMEOUT,
            what="the template pods' claims generated",
        )
        path = await asyncio.to_thread(
            kubectl_snapshot,
            plane.binary,
            plane.kubeconfig,
            tmp_path / "snapshot.yaml",
            DRA_SNAPSHOT_KINDS,
        )
        sim = await simulated(path, config, DRA_SEED, namespace)
        sim_allocations = await _simulated_allocations(path, config, DRA_SEED, namespace)
        assert len(sim) == len(pods)
        # Not vacuous: claims allocated on several nodes, and some pods refused.
        assert len({node for node, _, _ in sim_allocations.values()}) > 1
        assert any(not o.node for o in sim.values())
        async with running_scheduler(
            plane.kubeconfig, name, config_text=config.read_text(), rng=random.Random(DRA_SEED)
        ):
            settled = await eventually(
                lambda: _settled(core, namespace, len(pods)),
                timeout=SETTLE_TIMEOUT,
                what="every DRA pod bound or told why not",
            )
        live = {pod["metadata"]["name"]: _live_outcome(pod) for pod in settled}
        live_allocations = await _live_allocations(api, namespace)
        await delete_pods(core, namespace)
    found = disagreements(sim, live) + node_differences(sim, live)
    for claim_name in sorted(set(sim_allocations) | set(live_allocations)):
        ours, theirs = sim_allocations.get(claim_name), live_allocations.get(claim_name)
        if ours != theirs:
            found.append(
                f"claim {claim_name}: simulate allocated {ours}, the live scheduler {theirs}"
            )
    assert not found, "\n".join(line.replace("upstream", "live") for line in found)
