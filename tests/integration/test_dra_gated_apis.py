"""DynamicResources features whose API the default test control plane does
not serve: list-type attributes (DRAListTypeAttributes, alpha: the API
server drops ``ints``/``strings``... unless its gate is on) and
DeviceTaintRules (DRADeviceTaintRules, beta and off, ``resource.k8s.io/
v1beta2``). This module starts its own control plane with those gates and
that API version (no controller manager: claims are created directly), so
the session's plane, which every other test shares, stays as it is.

Each feature is shown in both positions of the scheduler's gate.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from localcluster import ControlPlane, ControlPlaneOptions
from tests.integration.conftest import EXISTING_KUBECONFIG_ENV, Cluster, NodePool
from tests.support.builders import make_node, make_pod
from tests.support.drabuilders import make_claim, make_class, make_slice, pod_uses_claim
from tests.support.dradriver import Driver, allocated_devices, simulated_driver
from tests.support.kubeapi import condition, read_json, read_pod
from tests.support.scheduler import running_scheduler, unique_scheduler_name
from tests.support.wait import eventually

GATES = "DRAListTypeAttributes=true,DRADeviceTaintRules=true"


@pytest.fixture(scope="module")
def control_plane() -> Iterator[Cluster]:
    """Overrides the session's plane for this module only."""
    if os.environ.get(EXISTING_KUBECONFIG_ENV):
        pytest.skip("needs a control plane with alpha DRA gates, started by the tests")
    options = ControlPlaneOptions(
        controller_manager=False,
        feature_gates=GATES,
        extra_apiserver_args=["--runtime-config=resource.k8s.io/v1beta2=true"],
    )
    with ControlPlane(options) as plane:
        yield Cluster(kubeconfig=plane.kubeconfig, plane=plane)


async def _publish(driver: Driver, node: str, devices: list[dict[str, Any]]) -> None:
    await driver.api.create_device_class(make_class(driver.device_class).driver(driver.name).obj())
    body = make_slice(f"{node}-{driver.name}").driver(driver.name).pool(node).node(node).obj()
    body["metadata"].pop("resourceVersion")
    body["spec"]["devices"] = devices
    await driver.api.create_resource_slice(body)
    driver.slices.append(body["metadata"]["name"])


def _claim(driver: Driver, namespace: str, name: str, **request: Any) -> dict[str, Any]:
    claim = make_claim(name, namespace).request("gpu", driver.device_class, **request).obj()
    claim["metadata"].pop("uid")
    return claim


def _pod(namespace: str, scheduler: str, name: str) -> dict[str, Any]:
    """A pod using the claim of its own name."""
    return pod_uses_claim(make_pod(name, namespace).scheduler(scheduler).obj(), "gpu", name)


async def _claim_and_pod(
    driver: Driver,
    core: client.CoreV1Api,
    namespace: str,
    scheduler: str,
    name: str,
    **request: Any,
) -> None:
    claim = _claim(driver, namespace, name, **request)
    await driver.api.create_namespaced_resource_claim(namespace, claim)
    await core.create_namespaced_pod(namespace, _pod(namespace, scheduler, name))


async def _node_of(core: client.CoreV1Api, namespace: str, name: str) -> str:
    return str((await read_pod(core, namespace, name))["spec"].get("nodeName", ""))


async def _told(core: client.CoreV1Api, namespace: str, name: str) -> str:
    found = condition(await read_pod(core, namespace, name), "PodScheduled")
    return str(found.get("message", "")) if found else ""


async def test_list_attributes_select_devices_only_with_the_gate_on(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    node = await nodes.create(make_node("list-gpu").obj())
    async with simulated_driver(kube) as driver:
        await _publish(
            driver,
            node,
            [
                {"name": "gpu-0", "attributes": {"models": {"strings": ["a100", "h100"]}}},
                {"name": "gpu-1", "attributes": {"models": {"strings": ["h100"]}}},
                {"name": "gpu-2", "attributes": {"models": {"strings": ["l4"]}}},
            ],
        )
        # precondition: the API server kept the list attribute (gate on there)
        stored = await read_json(
            await driver.api.read_resource_slice(driver.slices[0], _preload_content=False)
        )
        assert stored["spec"]["devices"][1]["attributes"] == {"models": {"strings": ["h100"]}}
        selector = f'device.attributes["{driver.name}"].models.includes("h100")'
        await driver.api.create_namespaced_resource_claim(
            namespace, _claim(driver, namespace, "pair", count=2, selectors=[selector])
        )
        off = unique_scheduler_name()
        async with running_scheduler(control_plane.kubeconfig, off):
            await core.create_namespaced_pod(namespace, _pod(namespace, off, "pair"))
            message = await eventually(
                lambda: _told(core, namespace, "pair"), timeout=60, what="gate off: pod told"
            )
            # without the gate a list attribute has no value: every selector fails
            assert "unsupported attribute value" in message
            assert allocated_devices(await driver.claims(namespace)) == []
        await core.delete_namespaced_pod("pair", namespace, grace_period_seconds=0)
        on = unique_scheduler_name()
        async with running_scheduler(
            control_plane.kubeconfig, on, feature_gates="DRAListTypeAttributes=true"
        ):

            async def recreated() -> bool:
                try:
                    await core.create_namespaced_pod(namespace, _pod(namespace, on, "pair"))
                except client.ApiException as error:
                    if error.status == 409:  # the old pod is still going away
                        return False
                    raise
                return True

            await eventually(recreated, timeout=60, what="pod recreated")
            assert (
                await eventually(
                    lambda: _node_of(core, namespace, "pair"), timeout=60, what="gate on: bound"
                )
                == node
            )
        (claim,) = await driver.claims(namespace)
        assert [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]] == [
            "gpu-0",
            "gpu-1",
        ]


async def test_match_attribute_over_lists_needs_a_common_element(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    node = await nodes.create(make_node("numa-gpu").obj())
    async with simulated_driver(kube) as driver:
        await _publish(
            driver,
            node,
            [
                {"name": "gpu-0", "attributes": {"numa": {"ints": [0, 1]}}},
                {"name": "gpu-1", "attributes": {"numa": {"ints": [2]}}},
                {"name": "gpu-2", "attributes": {"numa": {"ints": [1, 2]}}},
            ],
        )
        name = unique_scheduler_name()
        async with running_scheduler(
            control_plane.kubeconfig, name, feature_gates="DRAListTypeAttributes=true"
        ):
            claim = _claim(driver, namespace, "numa", count=2)
            claim["spec"]["devices"]["constraints"] = [{"matchAttribute": f"{driver.name}/numa"}]
            await driver.api.create_namespaced_resource_claim(namespace, claim)
            await core.create_namespaced_pod(namespace, _pod(namespace, name, "numa"))
            assert (
                await eventually(
                    lambda: _node_of(core, namespace, "numa"), timeout=60, what="bound"
                )
                == node
            )
        (allocated,) = await driver.claims(namespace)
        # gpu-0 and gpu-1 share nothing; gpu-0 and gpu-2 share NUMA node 1
        assert [r["device"] for r in allocated["status"]["allocation"]["devices"]["results"]] == [
            "gpu-0",
            "gpu-2",
        ]


async def _taint_rule(kube: client.ApiClient, driver: Driver, device: str) -> str:
    name = f"rule-{secrets.token_hex(3)}"
    await client.ResourceV1beta2Api(kube).create_device_taint_rule(
        {
            "apiVersion": "resource.k8s.io/v1beta2",
            "kind": "DeviceTaintRule",
            "metadata": {"name": name},
            "spec": {
                "deviceSelector": {"driver": driver.name, "device": device},
                "taint": {"key": "maintenance", "value": "planned", "effect": "NoSchedule"},
            },
        }
    )
    return name


@pytest.mark.parametrize(
    ("gates", "lands"),
    [
        pytest.param("DRADeviceTaintRules=true", False, id="gate on: the rule's taint blocks"),
        pytest.param("", True, id="gate off: rules are ignored"),
    ],
)
async def test_a_device_taint_rule_keeps_intolerant_pods_off_its_device(  # noqa: PLR0917 - fixtures
    control_plane: Cluster,
    kube: client.ApiClient,
    namespace: str,
    nodes: NodePool,
    gates: str,
    lands: bool,
) -> None:
    core = client.CoreV1Api(kube)
    node = await nodes.create(make_node("ruled-gpu").obj())
    rules = client.ResourceV1beta2Api(kube)
    async with simulated_driver(kube) as driver:
        await _publish(driver, node, [{"name": "gpu-0"}])
        rule = await _taint_rule(kube, driver, "gpu-0")
        try:
            name = unique_scheduler_name()
            async with running_scheduler(control_plane.kubeconfig, name, feature_gates=gates):
                await _claim_and_pod(driver, core, namespace, name, "intolerant")
                if lands:
                    assert (
                        await eventually(
                            lambda: _node_of(core, namespace, "intolerant"),
                            timeout=60,
                            what="intolerant bound",
                        )
                        == node
                    )
                    return
                message = await eventually(
                    lambda: _told(core, namespace, "intolerant"), timeout=60, what="told"
                )
                assert "cannot allocate all claims" in message
                tolerations = ({"key": "maintenance", "operator": "Exists"},)
                await _claim_and_pod(
                    driver, core, namespace, name, "tolerant", tolerations=tolerations
                )
                assert (
                    await eventually(
                        lambda: _node_of(core, namespace, "tolerant"),
                        timeout=60,
                        what="tolerant bound",
                    )
                    == node
                )
                assert await _node_of(core, namespace, "intolerant") == ""
        finally:
            await rules.delete_device_taint_rule(rule)
