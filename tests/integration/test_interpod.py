"""PodTopologySpread and InterPodAffinity on a real API server: replicas
spread evenly over zones, anti-affinity keeps replicas apart (the extra one
waits with the upstream message), and required affinity follows its target."""

from __future__ import annotations

from collections import Counter
from typing import Any

from kubernetes_asyncio import client

from tests.support.builders import make_node, make_pod
from tests.support.cluster import Cluster, NodePool
from tests.support.kubeapi import condition, create_all, list_pods, read_pod
from tests.support.scheduler import running_scheduler, unique_scheduler_name
from tests.support.wait import eventually

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


async def _placed(core: client.CoreV1Api, namespace: str, count: int) -> dict[str, str] | None:
    placed = {
        p["metadata"]["name"]: p["spec"]["nodeName"]
        for p in await list_pods(core, namespace)
        if p["spec"].get("nodeName")
    }
    return placed if len(placed) >= count else None


async def test_replicas_spread_evenly_over_three_zones(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    zone_of: dict[str, str] = {}
    # Zone a has four nodes, b and c one each: resource scoring alone would put
    # most replicas in zone a.
    for zone, count in (("a", 4), ("b", 1), ("c", 1)):
        for index in range(count):
            node = await nodes.create(make_node(f"{zone}{index}").zone(zone).obj())
            zone_of[node] = zone
    async with running_scheduler(control_plane.kubeconfig, name):
        pods = [
            make_pod(f"web-{index}", namespace)
            .scheduler(name)
            .label("app", "web")
            .requests(cpu="100m")
            .spread(1, ZONE, selector={"matchLabels": {"app": "web"}})
            .obj()
            for index in range(9)
        ]
        await create_all(lambda body: core.create_namespaced_pod(namespace, body), pods)
        placed = await eventually(
            lambda: _placed(core, namespace, 9), timeout=60, what="all 9 replicas bound"
        )
    per_zone = Counter(zone_of[node] for node in placed.values())
    assert per_zone == {"a": 3, "b": 3, "c": 3}


async def test_anti_affinity_keeps_replicas_apart_and_the_extra_one_waits(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    for index in range(3):
        await nodes.create(make_node(f"h{index}").obj())
    async with running_scheduler(control_plane.kubeconfig, name):
        pods = [
            make_pod(f"db-{index}", namespace)
            .scheduler(name)
            .label("app", "db")
            .required_pod_anti_affinity(HOST, app="db")
            .obj()
            for index in range(4)
        ]
        await create_all(lambda body: core.create_namespaced_pod(namespace, body), pods)
        placed = await eventually(
            lambda: _placed(core, namespace, 3), timeout=60, what="three replicas bound"
        )
        assert len(set(placed.values())) == 3, "one replica per node"
        (waiting,) = {f"db-{index}" for index in range(4)} - set(placed)

        async def told() -> dict[str, Any] | None:
            found = condition(await read_pod(core, namespace, waiting), "PodScheduled")
            return found if found and found.get("message") else None

        scheduled = await eventually(told, what="PodScheduled condition of the extra replica")
        assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")
        # Upstream's message; with DefaultPreemption a " preemption: ..." part follows.
        assert scheduled["message"].startswith(
            "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."
        )
        assert (await read_pod(core, namespace, waiting))["spec"].get("nodeName") is None

        # A replica going away frees its node for the one that waited.
        freed = placed[sorted(placed)[0]]
        await core.delete_namespaced_pod(sorted(placed)[0], namespace, grace_period_seconds=0)

        async def bound_to_freed() -> str | None:
            node = (await read_pod(core, namespace, waiting))["spec"].get("nodeName")
            return node if node else None

        assert await eventually(bound_to_freed, timeout=60, what="waiting replica bound") == freed


async def test_required_affinity_follows_its_target_zone(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    zone_of: dict[str, str] = {}
    for zone in ("a", "b"):
        for index in range(2):
            node = await nodes.create(make_node(f"{zone}{index}").zone(zone).obj())
            zone_of[node] = zone
    target = next(node for node, zone in zone_of.items() if zone == "b")
    async with running_scheduler(control_plane.kubeconfig, name):
        await core.create_namespaced_pod(
            namespace,
            make_pod("cache", namespace).scheduler(name).label("app", "cache").node(target).obj(),
        )
        followers = [
            make_pod(f"app-{index}", namespace)
            .scheduler(name)
            .pod_affinity_term("podAffinity", ZONE, {"matchLabels": {"app": "cache"}})
            .obj()
            for index in range(4)
        ]
        await create_all(lambda body: core.create_namespaced_pod(namespace, body), followers)
        placed = await eventually(
            lambda: _placed(core, namespace, 5), timeout=60, what="followers bound"
        )
    assert {zone_of[node] for node in placed.values()} == {"b"}
