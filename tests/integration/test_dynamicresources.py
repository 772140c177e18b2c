"""DynamicResources on the real control plane (with the resourceclaim
controller turning templates into claims): pods land next to their devices,
claims are written as upstream writes them, no device is given twice, and a
broken selector is explained to the user.

A small simulated driver publishes a DeviceClass and one ResourceSlice per
node (pool = node name), as upstream's scheduler_perf ``createResourceDriver``
does; its names are unique per test, since these objects are cluster-scoped.
"""

from __future__ import annotations

import secrets
from typing import Any

from kubernetes_asyncio import client

from tests.support.builders import make_node, make_pod
from tests.support.cluster import Cluster, NodePool
from tests.support.drabuilders import (
    make_claim,
    make_class,
    make_device,
    make_slice,
    pod_uses_claim,
)
from tests.support.dradriver import allocated_devices, simulated_driver
from tests.support.kubeapi import condition, create_all, list_pods, read_json, read_pod
from tests.support.scheduler import running_scheduler, scheduler_config, unique_scheduler_name
from tests.support.wait import eventually


async def test_template_claim_pod_lands_next_to_its_device_and_the_claim_is_written(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    with_gpu = await nodes.create(make_node("with-gpu").obj())
    await nodes.create(make_node("without").obj())
    async with simulated_driver(kube) as driver, running_scheduler(control_plane.kubeconfig, name):
        await driver.publish([with_gpu], devices=1)
        await driver.template(namespace)
        pod = make_pod("trainer", namespace).scheduler(name).claim_template("gpu", "gpu").obj()
        await core.create_namespaced_pod(namespace, pod)

        async def bound() -> str:
            return str((await read_pod(core, namespace, "trainer"))["spec"].get("nodeName", ""))

        assert await eventually(bound, timeout=60, what="pod bound") == with_gpu
        uid = (await read_pod(core, namespace, "trainer"))["metadata"]["uid"]
        (claim,) = await driver.claims(namespace)
        status = claim["status"]
        assert [
            (r["request"], r["driver"], r["pool"], r["device"])
            for r in status["allocation"]["devices"]["results"]
        ] == [("gpu", driver.name, with_gpu, "gpu-0")]
        assert status["reservedFor"] == [{"resource": "pods", "name": "trainer", "uid": uid}]
        assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]
        assert status["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0][
            "values"
        ] == [with_gpu]


async def test_fifty_pods_race_for_forty_devices_and_no_device_is_given_twice(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    names = [await nodes.create(make_node(f"dra-{i}").obj()) for i in range(4)]
    async with simulated_driver(kube) as driver, running_scheduler(control_plane.kubeconfig, name):
        await driver.publish(names, devices=10)
        await driver.template(namespace)
        pods = [
            make_pod(f"racer-{i}", namespace).scheduler(name).claim_template("gpu", "gpu").obj()
            for i in range(50)
        ]
        await create_all(lambda body: core.create_namespaced_pod(namespace, body), pods)

        async def settled() -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
            listed = await list_pods(core, namespace)
            bound = [p for p in listed if p["spec"].get("nodeName")]
            told = [
                p
                for p in listed
                if not p["spec"].get("nodeName")
                and (condition(p, "PodScheduled") or {}).get("reason") == "Unschedulable"
            ]
            return (bound, told) if len(bound) + len(told) == 50 and len(bound) >= 40 else None

        bound, told = await eventually(settled, timeout=180, interval=0.5, what="40 bound, 10 told")
        assert len(bound) == 40
        assert len(told) == 10
        for pod in told:
            message = condition(pod, "PodScheduled")["message"]  # type: ignore[index]
            assert message == (
                "0/4 nodes are available: 4 cannot allocate all claims. still not schedulable, "
                "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
            ), message
        devices = allocated_devices(await driver.claims(namespace))
        assert len(devices) == 40
        assert len(set(devices)) == 40, "a device was allocated twice"
        by_pod_node = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in bound}
        assert set(by_pod_node.values()) == set(names)


async def _settled(
    core: client.CoreV1Api, namespace: str, total: int, bound_count: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    listed = await list_pods(core, namespace)
    bound = [p for p in listed if p["spec"].get("nodeName")]
    told = [
        p
        for p in listed
        if not p["spec"].get("nodeName")
        and (condition(p, "PodScheduled") or {}).get("reason") == "Unschedulable"
    ]
    done = len(bound) + len(told) == total and len(bound) >= bound_count
    return (bound, told) if done else None


async def test_two_profiles_racing_for_twenty_devices_never_give_one_twice(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    """Both profiles run DynamicResources over one DRA state (upstream's
    shared DRA manager): pods of the two profiles alternate, so each
    profile's cycles run while the other's binds are in flight."""
    core = client.CoreV1Api(kube)
    first, second = unique_scheduler_name(), unique_scheduler_name()
    config = scheduler_config(first) + f"- schedulerName: {second}\n"
    names = [await nodes.create(make_node(f"profiles-{i}").obj()) for i in range(4)]
    async with (
        simulated_driver(kube) as driver,
        running_scheduler(control_plane.kubeconfig, first, config_text=config),
    ):
        await driver.publish(names, devices=5)
        await driver.template(namespace)
        pods = [
            make_pod(f"racer-{i}", namespace)
            .scheduler((first, second)[i % 2])
            .claim_template("gpu", "gpu")
            .obj()
            for i in range(30)
        ]
        await create_all(lambda body: core.create_namespaced_pod(namespace, body), pods)
        bound, told = await eventually(
            lambda: _settled(core, namespace, 30, 20),
            timeout=180,
            interval=0.5,
            what="20 bound, 10 told",
        )
        devices = allocated_devices(await driver.claims(namespace))
        assert len(devices) == len(set(devices)), "a device was allocated twice"
        assert (len(bound), len(told), len(devices)) == (20, 10, 20)
        assert {p["spec"]["schedulerName"] for p in bound} == {first, second}


async def test_race_survives_a_scheduler_restart_with_binds_in_flight(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    names = [await nodes.create(make_node(f"restart-{i}").obj()) for i in range(4)]
    async with simulated_driver(kube) as driver:
        await driver.publish(names, devices=10)
        await driver.template(namespace)
        async with running_scheduler(control_plane.kubeconfig, name, bind_grace=0.0) as first:
            pods = [
                make_pod(f"racer-{i}", namespace).scheduler(name).claim_template("gpu", "gpu").obj()
                for i in range(50)
            ]
            await create_all(lambda body: core.create_namespaced_pod(namespace, body), pods)

            async def mid_race() -> int:
                listed = await list_pods(core, namespace)
                bound = sum(1 for p in listed if p["spec"].get("nodeName"))
                # read after the await, so nothing runs between this and the stop
                in_flight = first.scheduler.binding_in_flight()
                return in_flight if 5 <= bound < 40 and in_flight else 0

            in_flight_at_stop = await eventually(
                mid_race, timeout=120, interval=0.01, what="binds in flight mid-race"
            )
        assert in_flight_at_stop > 0
        async with running_scheduler(control_plane.kubeconfig, name):
            bound, told = await eventually(
                lambda: _settled(core, namespace, 50, 40),
                timeout=180,
                interval=0.5,
                what="40 bound, 10 told after the restart",
            )
        assert (len(bound), len(told)) == (40, 10)
        devices = allocated_devices(await driver.claims(namespace))
        assert len(devices) == len(set(devices)), "a device was allocated twice"
        # every bound pod holds exactly its own device
        claims = await driver.claims(namespace)
        holders = {
            ref["name"]
            for claim in claims
            if (claim.get("status") or {}).get("allocation")
            for ref in claim["status"].get("reservedFor", [])
        }
        assert {p["metadata"]["name"] for p in bound} <= holders


async def test_bad_selector_fails_scheduling_naming_claim_request_and_expression(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    node = await nodes.create(make_node("gpu-node").obj())
    async with simulated_driver(kube) as driver, running_scheduler(control_plane.kubeconfig, name):
        await driver.publish([node], devices=1)
        expression = f'device.attributes["{driver.name}"].healthy'
        claim = (
            make_claim("broken", namespace)
            .request("gpu", driver.device_class, selectors=(expression,))
            .obj()
        )
        claim["metadata"].pop("uid")
        await driver.api.create_namespaced_resource_claim(namespace, claim)
        pod = pod_uses_claim(make_pod("victim", namespace).scheduler(name).obj(), "gpu", "broken")
        await core.create_namespaced_pod(namespace, pod)

        async def failed() -> list[dict[str, Any]]:
            events = client.EventsV1Api(kube)
            listed = await read_json(
                await events.list_namespaced_event(namespace, _preload_content=False)
            )
            return [
                e
                for e in listed["items"]
                if e["regarding"]["name"] == "victim" and e["reason"] == "FailedScheduling"
            ]

        (event, *_) = await eventually(failed, timeout=60, what="FailedScheduling event")
        note = event["note"]
        assert f"claim {namespace}/broken, request gpu: selector #0: CEL runtime error" in note, (
            note
        )
        assert "no such key: healthy" in note, note
        assert expression in note, note
        assert (await read_pod(core, namespace, "victim"))["spec"].get("nodeName", "") == ""


async def _node_of(core: client.CoreV1Api, namespace: str, name: str) -> str:
    return str((await read_pod(core, namespace, name))["spec"].get("nodeName", ""))


async def _told(core: client.CoreV1Api, namespace: str, name: str) -> str:
    found = condition(await read_pod(core, namespace, name), "PodScheduled")
    return str(found.get("message", "")) if found else ""


async def test_deleting_a_pod_frees_its_device_for_a_waiting_pod(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    node = await nodes.create(make_node("one-gpu").obj())
    async with simulated_driver(kube) as driver, running_scheduler(control_plane.kubeconfig, name):
        await driver.publish([node], devices=1)
        await driver.template(namespace)
        for pod_name in ("first", "second"):
            pod = make_pod(pod_name, namespace).scheduler(name).claim_template("gpu", "gpu").obj()
            await core.create_namespaced_pod(namespace, pod)
            if pod_name == "first":
                await eventually(
                    lambda: _node_of(core, namespace, "first"), timeout=60, what="first bound"
                )
        message = await eventually(
            lambda: _told(core, namespace, "second"), timeout=60, what="second told"
        )
        assert "cannot allocate all claims" in message
        await core.delete_namespaced_pod("first", namespace, grace_period_seconds=0)
        # The resourceclaim controller deallocates and deletes first's claim;
        # the claim update requeues second through the queueing hint (no flush).
        assert (
            await eventually(
                lambda: _node_of(core, namespace, "second"), timeout=60, what="second bound"
            )
            == node
        )
        devices = allocated_devices(await driver.claims(namespace))
        assert devices == [(driver.name, node, "gpu-0")]


async def test_a_shared_claim_serves_two_pods_on_its_node_and_pins_a_third(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    names = [await nodes.create(make_node(f"shared-{i}").obj()) for i in range(2)]
    async with simulated_driver(kube) as driver, running_scheduler(control_plane.kubeconfig, name):
        await driver.publish(names, devices=1)
        claim = make_claim("shared", namespace).request("gpu", driver.device_class).obj()
        claim["metadata"].pop("uid")
        await driver.api.create_namespaced_resource_claim(namespace, claim)
        for pod_name in ("a", "b", "c"):
            pod = pod_uses_claim(
                make_pod(pod_name, namespace).scheduler(name).obj(), "gpu", "shared"
            )
            await core.create_namespaced_pod(namespace, pod)
        placed = {
            pod_name: await eventually(
                lambda pod_name=pod_name: _node_of(core, namespace, pod_name),  # type: ignore[misc]
                timeout=60,
                what=f"{pod_name} bound",
            )
            for pod_name in ("a", "b", "c")
        }
        assert len(set(placed.values())) == 1, placed
        (written,) = await driver.claims(namespace)
        assert sorted(r["name"] for r in written["status"]["reservedFor"]) == ["a", "b", "c"]
        assert len(allocated_devices([written])) == 1


async def test_a_device_taint_keeps_pods_off_until_they_tolerate_it(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    node = await nodes.create(make_node("tainted-gpu").obj())
    async with simulated_driver(kube) as driver, running_scheduler(control_plane.kubeconfig, name):
        await driver.api.create_device_class(
            make_class(driver.device_class).driver(driver.name).obj()
        )
        body = make_slice(f"{node}-{driver.name}").driver(driver.name).pool(node).node(node).obj()
        body["metadata"].pop("resourceVersion")
        body["spec"]["devices"] = [
            {"name": "gpu-0", "taints": [{"key": "maintenance", "effect": "NoSchedule"}]}
        ]
        await driver.api.create_resource_slice(body)
        driver.slices.append(body["metadata"]["name"])
        for claim_name, tolerations in (
            ("intolerant", ()),
            ("tolerant", ({"key": "maintenance", "operator": "Exists"},)),
        ):
            claim = (
                make_claim(claim_name, namespace)
                .request("gpu", driver.device_class, tolerations=tolerations)
                .obj()
            )
            claim["metadata"].pop("uid")
            await driver.api.create_namespaced_resource_claim(namespace, claim)
            pod = pod_uses_claim(
                make_pod(claim_name, namespace).scheduler(name).obj(), "gpu", claim_name
            )
            await core.create_namespaced_pod(namespace, pod)
            if claim_name == "intolerant":
                # The device is free, yet the pod may not have it.
                message = await eventually(
                    lambda: _told(core, namespace, "intolerant"),
                    timeout=60,
                    what="intolerant told",
                )
                assert "cannot allocate all claims" in message
                assert allocated_devices(await driver.claims(namespace)) == []
        assert (
            await eventually(
                lambda: _node_of(core, namespace, "tolerant"), timeout=60, what="tolerant bound"
            )
            == node
        )
        assert await _node_of(core, namespace, "intolerant") == ""


async def test_a_partitionable_device_is_never_over_consumed(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    node = await nodes.create(make_node("partitioned").obj())
    consumption = {f"part-{i}": 4 for i in range(4)} | {"whole": 8}
    async with simulated_driver(kube) as driver, running_scheduler(control_plane.kubeconfig, name):
        await driver.api.create_device_class(
            make_class(driver.device_class).driver(driver.name).obj()
        )
        for slice_name, body in (
            (
                f"{node}-{driver.name}-devices",
                make_slice("x")
                .driver(driver.name)
                .pool(node, count=2)
                .node(node)
                .device(
                    *[
                        make_device(device).consumes("gpu-0", memory=f"{gib}Gi")
                        for device, gib in consumption.items()
                    ]
                )
                .obj(),
            ),
            (
                f"{node}-{driver.name}-counters",
                make_slice("x")
                .driver(driver.name)
                .pool(node, count=2)
                .node(node)
                .counters("gpu-0", memory="8Gi")
                .obj(),
            ),
        ):
            body["metadata"] = {"name": slice_name}
            await driver.api.create_resource_slice(body)
            driver.slices.append(slice_name)
        await driver.template(namespace)
        pods = [
            make_pod(f"slice-{i}", namespace).scheduler(name).claim_template("gpu", "gpu").obj()
            for i in range(4)
        ]
        await create_all(lambda body: core.create_namespaced_pod(namespace, body), pods)
        bound, told = await eventually(
            lambda: _settled(core, namespace, 4, 2), timeout=60, what="2 bound, 2 told"
        )
        assert (len(bound), len(told)) == (2, 2)
        devices = allocated_devices(await driver.claims(namespace))
        assert sum(consumption[device] for _, _, device in devices) <= 8, devices


async def test_an_extended_resource_backed_by_a_device_class_gets_a_claim(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    node = await nodes.create(make_node("ext-gpu").obj())
    await nodes.create(make_node("ext-none").obj())
    resource = f"{secrets.token_hex(3)}.example.com/gpu"
    async with simulated_driver(kube) as driver, running_scheduler(control_plane.kubeconfig, name):
        await driver.api.create_device_class(
            make_class(driver.device_class).driver(driver.name).extended_resource(resource).obj()
        )
        body = make_slice(f"{node}-{driver.name}").driver(driver.name).pool(node).node(node)
        body = body.device("gpu-0", "gpu-1")
        created = body.obj()
        created["metadata"].pop("resourceVersion")
        await driver.api.create_resource_slice(created)
        driver.slices.append(created["metadata"]["name"])
        pod = make_pod("ext", namespace).scheduler(name).request(resource, "2").obj()
        pod["spec"]["containers"][0]["resources"]["limits"] = {resource: "2"}
        await core.create_namespaced_pod(namespace, pod)
        assert (
            await eventually(lambda: _node_of(core, namespace, "ext"), timeout=60, what="bound")
            == node
        )
        (claim,) = await driver.claims(namespace)
        assert claim["metadata"]["annotations"] == {
            "resource.kubernetes.io/extended-resource-claim": "true"
        }
        assert sorted(d for _, _, d in allocated_devices([claim])) == ["gpu-0", "gpu-1"]
        status = (await read_pod(core, namespace, "ext"))["status"]
        assert status["extendedResourceClaimStatus"] == {
            "resourceClaimName": claim["metadata"]["name"],
            "requestMappings": [
                {
                    "containerName": pod["spec"]["containers"][0]["name"],
                    "resourceName": resource,
                    "requestName": "container-0-request-0",
                }
            ],
        }


async def test_a_broken_class_selector_recovers_when_the_class_is_fixed(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    node = await nodes.create(make_node("fixable").obj())
    async with simulated_driver(kube) as driver, running_scheduler(control_plane.kubeconfig, name):
        # The API server rejects selectors that do not compile; this one fails
        # at run time: the devices have no "healthy" attribute.
        broken = (
            make_class(driver.device_class)
            .selector(f'device.attributes["{driver.name}"].healthy')
            .obj()
        )
        created = await driver.api.create_device_class(broken)
        body = make_slice(f"{node}-{driver.name}").driver(driver.name).pool(node).node(node)
        slice_ = body.device("gpu-0").obj()
        slice_["metadata"].pop("resourceVersion")
        await driver.api.create_resource_slice(slice_)
        driver.slices.append(slice_["metadata"]["name"])
        await driver.template(namespace)
        pod = make_pod("patient", namespace).scheduler(name).claim_template("gpu", "gpu").obj()
        await core.create_namespaced_pod(namespace, pod)
        message = await eventually(
            lambda: _told(core, namespace, "patient"), timeout=60, what="patient told"
        )
        assert f"class {driver.device_class}: selector #0: CEL runtime error" in message
        fixed = make_class(driver.device_class).driver(driver.name).obj()
        fixed["metadata"]["resourceVersion"] = created.metadata.resource_version
        await driver.api.replace_device_class(driver.device_class, fixed)
        # A CEL error fails the attempt (Error: the pod backs off and retries,
        # and the DeviceClass update moves it too); with the class fixed it binds.
        assert (
            await eventually(lambda: _node_of(core, namespace, "patient"), timeout=60, what="bound")
            == node
        )
