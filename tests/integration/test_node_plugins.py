"""NodeAffinity and NodePorts on a real API server: a pod whose nodeSelector no
node satisfies waits with upstream's message and binds once such a node
appears; a host port held on a node keeps a second pod wanting it away."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio import client

from tests.support.builders import make_node, make_pod
from tests.support.cluster import Cluster, NodePool
from tests.support.kubeapi import condition, read_pod
from tests.support.scheduler import running_scheduler, unique_scheduler_name
from tests.support.wait import eventually


async def _told(core: client.CoreV1Api, namespace: str, name: str) -> dict[str, Any] | None:
    found = condition(await read_pod(core, namespace, name), "PodScheduled")
    return found if found and found.get("message") else None


async def _node_of(core: client.CoreV1Api, namespace: str, name: str) -> str | None:
    pod = await read_pod(core, namespace, name)
    return pod["spec"].get("nodeName") or None


def upstream_messages(fit: str, preemption: str) -> set[str]:
    """Upstream's message, with or without the DefaultPreemption tail (the
    plugin may or may not be in this build's default profile yet), after
    DynamicResources' PostFilter tail (the default profile has it)."""
    dra = "no new claims to deallocate"
    return {fit, f"{fit} {preemption}", f"{fit} {dra}", f"{fit} {dra}, {preemption}"}


async def test_node_selector_nobody_matches_waits_then_binds_to_a_matching_new_node(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    await nodes.create(make_node("plain-a").obj())
    await nodes.create(make_node("plain-b").label("disktype", "hdd").obj())
    async with running_scheduler(control_plane.kubeconfig, name):
        pod = make_pod("wants-ssd", namespace).scheduler(name).node_selector(disktype="ssd")
        await core.create_namespaced_pod(namespace, pod.obj())

        scheduled = await eventually(
            lambda: _told(core, namespace, "wants-ssd"), what="PodScheduled condition written"
        )
        assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")
        assert scheduled["message"] in upstream_messages(
            "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.",
            "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
        )
        assert await _node_of(core, namespace, "wants-ssd") is None

        ssd = await nodes.create(make_node("fast").label("disktype", "ssd").obj())
        placed = await eventually(
            lambda: _node_of(core, namespace, "wants-ssd"), what="pod bound to the new node"
        )
        assert placed == ssd


async def test_host_port_held_on_a_node_keeps_the_second_pod_off_it(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    only = await nodes.create(make_node("only").obj())
    async with running_scheduler(control_plane.kubeconfig, name):
        first = make_pod("first", namespace).scheduler(name).host_port(8080)
        await core.create_namespaced_pod(namespace, first.obj())
        assert (
            await eventually(lambda: _node_of(core, namespace, "first"), what="first bound") == only
        )

        # Another IP of the same host still conflicts: the first holds 0.0.0.0.
        second = make_pod("second", namespace).scheduler(name).host_port(8080, host_ip="10.1.2.3")
        await core.create_namespaced_pod(namespace, second.obj())
        scheduled = await eventually(
            lambda: _told(core, namespace, "second"), what="PodScheduled condition written"
        )
        assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")
        assert scheduled["message"] in upstream_messages(
            "0/1 nodes are available: "
            "1 node(s) didn't have free ports for the requested pod ports.",
            "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
        )
        assert await _node_of(core, namespace, "second") is None

        # A UDP port of the same number is free.
        udp = make_pod("udp", namespace).scheduler(name).host_port(8080, protocol="UDP")
        await core.create_namespaced_pod(namespace, udp.obj())
        assert await eventually(lambda: _node_of(core, namespace, "udp"), what="udp bound") == only

        other = await nodes.create(make_node("other").obj())
        placed = await eventually(
            lambda: _node_of(core, namespace, "second"), what="second bound to the new node"
        )
        assert placed == other
