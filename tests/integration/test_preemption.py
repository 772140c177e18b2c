"""DefaultPreemption on a real API server: a high-priority pod that fits
nowhere evicts lower-priority pods, sparing the ones a PodDisruptionBudget
protects when another node would do, and is bound to the node it was
nominated to."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.support.builders import make_node, make_pod
from tests.support.cluster import Cluster, NodePool
from tests.support.kubeapi import condition, list_pods, read_json, read_pod
from tests.support.scheduler import running_scheduler, unique_scheduler_name
from tests.support.wait import eventually

LOW, HIGH = 10, 1000


@pytest.fixture
async def priority_classes(kube: client.ApiClient) -> AsyncIterator[tuple[str, str]]:
    scheduling = client.SchedulingV1Api(kube)
    suffix = secrets.token_hex(3)
    names = (f"low-{suffix}", f"high-{suffix}", f"polite-{suffix}")
    policies = ("PreemptLowerPriority", "PreemptLowerPriority", "Never")
    for name, value, policy in zip(names, (LOW, HIGH, HIGH), policies, strict=True):
        await scheduling.create_priority_class(
            {"metadata": {"name": name}, "value": value, "preemptionPolicy": policy}
        )
    yield names[0], names[1]
    for name in names:
        await scheduling.delete_priority_class(name)


async def _events(kube: client.ApiClient, namespace: str) -> list[dict[str, Any]]:
    events = client.EventsV1Api(kube)
    listed = await read_json(await events.list_namespaced_event(namespace, _preload_content=False))
    items: list[dict[str, Any]] = listed["items"]
    return items


async def test_high_priority_pod_preempts_the_victim_no_pdb_protects_and_binds_there(
    control_plane: Cluster,
    kube: client.ApiClient,
    namespace: str,
    nodes: NodePool,
    priority_classes: tuple[str, str],
) -> None:
    core = client.CoreV1Api(kube)
    low, high = priority_classes
    name = unique_scheduler_name()
    guarded = await nodes.create(
        make_node("guarded").capacity(cpu="1", memory="4Gi", pods="10").obj()
    )
    plain = await nodes.create(make_node("plain").capacity(cpu="1", memory="4Gi", pods="10").obj())
    # No disruption controller runs here, so the PDB's status allows no
    # disruption at all: evicting the guarded pod would violate it.
    await client.PolicyV1Api(kube).create_namespaced_pod_disruption_budget(
        namespace,
        {
            "metadata": {"name": "keep-guarded"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
        },
    )
    for pod_name, node, app in (
        ("victim-guarded", guarded, "guarded"),
        ("victim-plain", plain, "plain"),
    ):
        # Bound by hand; without a kubelet a deleted pod stays terminating
        # (its grace period) until it is force-deleted, as a kubelet would.
        pod = make_pod(pod_name, namespace).node(node).priority_class(low).label("app", app)
        await core.create_namespaced_pod(namespace, pod.requests(cpu="800m").obj())

    async with running_scheduler(control_plane.kubeconfig, name) as app:
        preemptor = make_pod("preemptor", namespace).scheduler(name).priority_class(high)
        await core.create_namespaced_pod(namespace, preemptor.requests(cpu="500m").obj())

        async def nominated() -> str | None:
            found: str | None = (await read_pod(core, namespace, "preemptor"))["status"].get(
                "nominatedNodeName"
            )
            return found or None

        assert await eventually(nominated, timeout=30, what="preemptor nominated") == plain

        async def terminating() -> dict[str, Any] | None:
            victim = await read_pod(core, namespace, "victim-plain")
            return victim if victim["metadata"].get("deletionTimestamp") else None

        victim = await eventually(terminating, what="the unprotected victim deleted")
        disruption = condition(victim, "DisruptionTarget")
        assert disruption is not None
        assert (disruption["status"], disruption["reason"], disruption["message"]) == (
            "True",
            "PreemptionByScheduler",
            f"{name}: preempting to accommodate a higher priority pod",
        )
        spared = await read_pod(core, namespace, "victim-guarded")
        assert "deletionTimestamp" not in spared["metadata"], "the PDB-protected pod is spared"
        preempted = [e for e in await _events(kube, namespace) if e["reason"] == "Preempted"]
        assert [(e["regarding"]["name"], e["action"], e["type"]) for e in preempted] == [
            ("victim-plain", "Preempting", "Normal")
        ]
        assert preempted[0]["note"].endswith(f"on node {plain}")

        # The kubelet would now finish the victim off.
        await core.delete_namespaced_pod("victim-plain", namespace, grace_period_seconds=0)

        async def bound() -> str | None:
            node: str | None = (await read_pod(core, namespace, "preemptor"))["spec"].get(
                "nodeName"
            )
            return node or None

        assert await eventually(bound, timeout=30, what="preemptor bound") == plain
        remaining = {p["metadata"]["name"] for p in await list_pods(core, namespace)}
        assert remaining == {"victim-guarded", "preemptor"}
        attempts = app.metrics_registry.get_sample_value("scheduler_preemption_attempts_total")
        assert attempts is not None
        assert attempts >= 1
        victims = app.metrics_registry.get_sample_value("scheduler_preemption_victims_sum")
        assert victims == 1.0, "one preemption, one victim"


async def test_pod_with_preemption_policy_never_waits_and_says_why(
    control_plane: Cluster,
    kube: client.ApiClient,
    namespace: str,
    nodes: NodePool,
    priority_classes: tuple[str, str],
) -> None:
    core = client.CoreV1Api(kube)
    low, high = priority_classes
    polite = high.replace("high-", "polite-")
    name = unique_scheduler_name()
    only = await nodes.create(make_node("only").capacity(cpu="1", memory="4Gi", pods="10").obj())
    victim = make_pod("low", namespace).node(only).priority_class(low).requests(cpu="800m")
    await core.create_namespaced_pod(namespace, victim.obj())
    async with running_scheduler(control_plane.kubeconfig, name):
        pod = make_pod("polite", namespace).scheduler(name).priority_class(polite)
        await core.create_namespaced_pod(namespace, pod.requests(cpu="500m").obj())

        async def told() -> str | None:
            found = condition(await read_pod(core, namespace, "polite"), "PodScheduled")
            return found.get("message") if found else None

        message = await eventually(told, what="PodScheduled condition written")
        assert message == (
            "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
            "preemption: not eligible due to preemptionPolicy=Never."
        )
        left = await read_pod(core, namespace, "low")
        assert "deletionTimestamp" not in left["metadata"]
