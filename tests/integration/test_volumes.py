"""Volumes on a real API server: a WaitForFirstConsumer claim is provisioned
for the node the scheduler chose (selected-node annotation), or bound to a
matching static volume (claimRef), and the pod lands there once the claim is
bound; an unbound Immediate claim keeps its pod pending with upstream's
message until it is bound; a missing claim's creation wakes its pod.

No PV controller or provisioner runs in the test control plane: the test
plays both, as an external provisioner would (create a volume for the
selected node, bind the claim to it).
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator
from typing import Any

from kubernetes_asyncio import client

from scheduler.framework.volumes import ANN_BIND_COMPLETED, ANN_SELECTED_NODE
from tests.support.builders import make_node, make_pod
from tests.support.cluster import Cluster, NodePool
from tests.support.kubeapi import condition, read_json, read_pod
from tests.support.scheduler import running_scheduler, unique_scheduler_name
from tests.support.storage import (
    claim_volume,
    for_create,
    make_pv,
    make_pvc,
    make_storage_class,
)
from tests.support.wait import eventually

HOSTNAME = "kubernetes.io/hostname"


@contextlib.asynccontextmanager
async def storage_class(
    kube: client.ApiClient, *, wait: bool, provisioner: str = "example.com/no-op"
) -> AsyncIterator[str]:
    """A StorageClass whose provisioner nobody runs; deleted afterwards."""
    storage = client.StorageV1Api(kube)
    name = f"sc-{secrets.token_hex(3)}"
    builder = make_storage_class(name).provisioner(provisioner)
    if wait:
        builder = builder.wait_for_first_consumer()
    await storage.create_storage_class(builder.obj())
    try:
        yield name
    finally:
        await storage.delete_storage_class(name)


async def read_claim(core: client.CoreV1Api, namespace: str, name: str) -> dict[str, Any]:
    response = await core.read_namespaced_persistent_volume_claim(
        name, namespace, _preload_content=False
    )
    claim: dict[str, Any] = await read_json(response)
    return claim


async def read_volume(core: client.CoreV1Api, name: str) -> dict[str, Any]:
    volume: dict[str, Any] = await read_json(
        await core.read_persistent_volume(name, _preload_content=False)
    )
    return volume


async def make_available(core: client.CoreV1Api, name: str) -> None:
    volume = await read_volume(core, name)
    volume["status"] = {"phase": "Available"}
    await core.replace_persistent_volume_status(name, volume)


async def bind_claim(core: client.CoreV1Api, namespace: str, claim: str, volume: str) -> None:
    """What the PV controller does once a claim has its volume."""
    written = await read_claim(core, namespace, claim)
    written["spec"]["volumeName"] = volume
    written["metadata"].setdefault("annotations", {})[ANN_BIND_COMPLETED] = "yes"
    await core.replace_namespaced_persistent_volume_claim(claim, namespace, written)


async def bound_node(core: client.CoreV1Api, namespace: str, pod: str) -> str:
    return str((await read_pod(core, namespace, pod))["spec"].get("nodeName") or "")


async def pending_message(core: client.CoreV1Api, namespace: str, pod: str) -> str:
    found = condition(await read_pod(core, namespace, pod), "PodScheduled")
    if found and found.get("status") == "False":
        return str(found.get("message") or "")
    return ""


async def test_wait_for_first_consumer_claim_is_provisioned_on_the_chosen_node(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    for index in range(2):
        await nodes.create(make_node(f"w{index}").obj())
    async with (
        storage_class(kube, wait=True) as class_name,
        running_scheduler(control_plane.kubeconfig, name),
    ):
        pod = make_pod("app", namespace).scheduler(name).volume("data", **claim_volume("data"))
        await core.create_namespaced_pod(namespace, pod.obj())
        # The claim does not exist yet: pending, with upstream's lister message.
        message = await eventually(
            lambda: pending_message(core, namespace, "app"), what="pod pending without its claim"
        )
        await assert_reason(core, message, 'persistentvolumeclaim "data" not found')

        # Creating the claim wakes the pod (PersistentVolumeClaimAdd hint).
        claim = make_pvc("data", namespace).storage_class(class_name).request("1Gi").obj()
        await core.create_namespaced_persistent_volume_claim(namespace, for_create(claim))

        async def selected() -> str:
            annotations = (await read_claim(core, namespace, "data"))["metadata"].get(
                "annotations"
            ) or {}
            return str(annotations.get(ANN_SELECTED_NODE) or "")

        chosen = await eventually(selected, what="selected-node annotation on the claim")
        assert chosen in nodes.names
        assert (await read_pod(core, namespace, "app"))["spec"].get("nodeName", "") == ""

        # Play the provisioner and the PV controller.
        uid = (await read_claim(core, namespace, "data"))["metadata"]["uid"]
        volume = f"pvc-{uid}"
        pv = (
            make_pv(volume)
            .storage_class(class_name)
            .node_affinity(HOSTNAME, chosen)
            .claim_ref("data", namespace, uid=uid)
            .obj()
        )
        await core.create_persistent_volume(for_create(pv))
        try:
            await bind_claim(core, namespace, "data", volume)
            placed = await eventually(
                lambda: bound_node(core, namespace, "app"), what="pod bound once its claim is"
            )
            assert placed == chosen
        finally:
            await core.delete_persistent_volume(volume)


async def test_static_volume_is_bound_to_the_claim_for_the_chosen_node(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    await nodes.create(make_node("w0").obj())
    target = await nodes.create(make_node("w1").obj())
    async with (
        storage_class(kube, wait=True, provisioner="kubernetes.io/no-provisioner") as class_name,
        running_scheduler(control_plane.kubeconfig, name),
    ):
        volume = f"local-{secrets.token_hex(3)}"
        pv = make_pv(volume).storage_class(class_name).node_affinity(HOSTNAME, target).obj()
        await core.create_persistent_volume(for_create(pv))
        try:
            await make_available(core, volume)  # the PV controller's job
            claim = make_pvc("data", namespace).storage_class(class_name).request("1Gi").obj()
            await core.create_namespaced_persistent_volume_claim(namespace, for_create(claim))
            pod = make_pod("app", namespace).scheduler(name).volume("data", **claim_volume("data"))
            await core.create_namespaced_pod(namespace, pod.obj())

            async def claimed() -> dict[str, Any] | None:
                ref = (await read_volume(core, volume))["spec"].get("claimRef")
                return ref if ref else None

            ref = await eventually(claimed, what="the volume's claimRef written in PreBind")
            uid = (await read_claim(core, namespace, "data"))["metadata"]["uid"]
            assert (ref["namespace"], ref["name"], ref["uid"]) == (namespace, "data", uid)
            assert (await read_pod(core, namespace, "app"))["spec"].get("nodeName", "") == ""

            await bind_claim(core, namespace, "data", volume)  # the PV controller's job
            placed = await eventually(
                lambda: bound_node(core, namespace, "app"), what="pod bound once its claim is"
            )
            assert placed == target
        finally:
            await core.delete_persistent_volume(volume)


async def test_unbound_immediate_claim_keeps_the_pod_pending(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    await nodes.create(make_node("w0").obj())
    async with (
        storage_class(kube, wait=False) as class_name,
        running_scheduler(control_plane.kubeconfig, name) as app,
    ):
        claim = make_pvc("now", namespace).storage_class(class_name).request("1Gi").obj()
        await core.create_namespaced_persistent_volume_claim(namespace, for_create(claim))
        pod = make_pod("app", namespace).scheduler(name).volume("data", **claim_volume("now"))
        await core.create_namespaced_pod(namespace, pod.obj())

        message = await eventually(
            lambda: pending_message(core, namespace, "app"), what="pod told why it waits"
        )
        await assert_reason(core, message, "pod has unbound immediate PersistentVolumeClaims")
        assert (await read_pod(core, namespace, "app"))["spec"].get("nodeName", "") == ""
        assert app.queue.get(f"{namespace}/app") is not None  # still queued, not dropped

        # The PV controller binds the claim: the claim's update wakes the pod.
        volume = f"pv-{secrets.token_hex(3)}"
        await core.create_persistent_volume(
            for_create(make_pv(volume).storage_class(class_name).obj())
        )
        try:
            await bind_claim(core, namespace, "now", volume)
            assert await eventually(
                lambda: bound_node(core, namespace, "app"), what="pod bound once its claim is"
            )
        finally:
            await core.delete_persistent_volume(volume)


async def assert_reason(core: client.CoreV1Api, message: str, reason: str) -> None:
    """The FitError message of a PreFilter rejection as upstream words it
    (with or without the preemption tail that DefaultPreemption adds)."""
    listed = await read_json(await core.list_node(_preload_content=False))
    expected = f"0/{len(listed['items'])} nodes are available: {reason}."
    assert message == expected or message.startswith(expected + " "), message
