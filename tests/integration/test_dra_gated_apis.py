"""DynamicResources features whose API the default test control plane does
not serve: list-type attributes (DRAListTypeAttributes, alpha: the API
server drops ``ints``/``strings``... unless its gate is on) and
DeviceTaintRules (DRADeviceTaintRules, beta and off, ``resource.k8s.io/
v1beta2``). List attributes are also compared with the pinned upstream
kube-scheduler, pod by pod (for a CEL error: its own words). This module
starts its own control plane with those gates and that API version (no
controller manager: claims are created directly), so the session's plane,
which every other test shares, stays as it is.

Each feature is shown in both positions of the scheduler's gate.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest
from kubernetes_asyncio import client

from localcluster import ControlPlane, ControlPlaneOptions
from tests.integration.test_differential_dra import run
from tests.support.builders import make_node, make_pod
from tests.support.cluster import EXISTING_KUBECONFIG_ENV, Cluster, NodePool
from tests.support.differential import (
    OURS_PROFILE,
    UPSTREAM_PROFILE,
    Outcome,
    disagreements,
    ours_runner,
    upstream_runner,
)
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


# ------------------------------------------------ against upstream's scheduler
class _Devices(Protocol):
    """What ``run`` needs of a topology, and its publish/remove steps."""

    api: Any

    async def publish(self) -> None: ...

    async def remove(self) -> None: ...

    def claims(self) -> list[tuple[str, dict[str, Any]]]: ...


async def _ours_then_upstream(
    plane: ControlPlane,
    core: client.CoreV1Api,
    tmp_path: Path,
    *,
    gates: str,
    prefix: str,
    devices_for: Callable[[str], _Devices],
) -> tuple[dict[str, Outcome], dict[str, Outcome]]:
    """The same claims, each scheduler in its own namespace on its own copy
    of the devices (published before, removed after), ours first."""
    tag = secrets.token_hex(3)
    outcomes = []
    for who, profile, runner in (
        ("ours", OURS_PROFILE, ours_runner(plane.kubeconfig, gates)),
        ("upstream", UPSTREAM_PROFILE, upstream_runner(plane, tmp_path, gates)),
    ):
        namespace = f"{prefix}-{who}-{tag}"
        await core.create_namespace({"metadata": {"name": namespace}})
        devices = devices_for(who)
        try:
            await devices.publish()
            outcomes.append(await run(core, devices, namespace, profile, runner))  # type: ignore[arg-type]
        finally:
            await devices.remove()
    return outcomes[0], outcomes[1]


class ListTopology:
    """One node's devices with a list attribute ``numa`` for one driver (the
    interface ``test_differential_dra.run`` reads: ``api``, ``claims()``).

    Group ``main``: gpu-0 [0, 1], gpu-1 [1], gpu-2 [2], gpu-3 [2, 3] (named
    ``GPU_3``, no DNS label), gpu-4 [4], gpu-5 [4, 5]. Group ``quirk``:
    gpu-6 [7, 8], gpu-7 [7], gpu-8 [8], gpu-9 [8]: three devices with a
    common element (6, 8, 9), which even the experimental allocator, whose
    intersection does not widen on backtracking, would miss. The scheduler
    compares constraints as scalars whatever the gate, so every
    constraint over ``numa`` takes one device at most."""

    NUMA = ([0, 1], [1], [2], [2, 3], [4], [4, 5], [7, 8], [7], [8], [8])

    def __init__(self, api: client.ResourceV1Api, node: str, who: str) -> None:
        self.api = api
        self.node = node
        self.driver = f"{who}-{secrets.token_hex(3)}.example.com"
        self.device_class = f"lists-{self.driver}"
        self.created: list[tuple[str, str]] = []

    async def publish(self) -> None:
        await self.api.create_device_class(make_class(self.device_class).driver(self.driver).obj())
        self.created.append(("class", self.device_class))
        devices = [
            {
                "name": f"gpu-{j}",
                "attributes": {
                    "numa": {"ints": numa},
                    "name": {"string": "GPU_3" if j == 3 else f"gpu-{j}"},
                    "group": {"string": "main" if j < 6 else "quirk"},
                },
            }
            for j, numa in enumerate(self.NUMA)
        ]
        body = make_slice(f"{self.node}-{self.driver}").driver(self.driver).pool(self.node)
        obj = body.node(self.node).obj()
        obj["metadata"].pop("resourceVersion")
        obj["spec"]["devices"] = devices
        await self.api.create_resource_slice(obj)
        self.created.append(("slice", obj["metadata"]["name"]))

    async def remove(self) -> None:
        for kind, name in self.created:
            with contextlib.suppress(client.ApiException):
                if kind == "class":
                    await self.api.delete_device_class(name)
                else:
                    await self.api.delete_resource_slice(name)

    def claims(self) -> list[tuple[str, dict[str, Any]]]:
        a = f'device.attributes["{self.driver}"]'
        main, quirk = f'{a}.group == "main"', f'{a}.group == "quirk"'
        numa = f"{self.driver}/numa"

        def claim(name: str, count: int, *selectors: str) -> Any:
            return make_claim(name).request(
                "r", self.device_class, count=count, selectors=selectors
            )

        return [
            ("includes", claim("includes", 1, main, f"{a}.numa.includes(3)").obj()),
            ("match-three", claim("match-three", 3, main).match(numa).obj()),
            ("quirk", claim("quirk", 3, quirk).match(numa).obj()),
            ("match-pair", claim("match-pair", 2, main).match(numa).obj()),
            (
                "format-invalid",
                claim(
                    "format-invalid",
                    1,
                    main,
                    f'format.named("dns1123Label").value().validate({a}.name).hasValue()',
                ).obj(),
            ),
            ("distinct-pair", claim("distinct-pair", 2, main).distinct(numa).obj()),
            (
                "numeric-and-format",
                claim(
                    "numeric-and-format",
                    1,
                    main,
                    f"size({a}.numa) > 1.5",
                    f"!format.dns1123Label().validate({a}.name).hasValue()",
                ).obj(),
            ),
            (
                "not-shared",
                claim("not-shared", 1, main, "!device.allowMultipleAllocations").obj(),
            ),
        ]


def _cel_detail(outcome: Outcome) -> Outcome:
    """A CEL error's own words: ours also names the claim and request and
    quotes the expression (on purpose), and the class names differ per
    scheduler here (each has its own driver)."""
    message = outcome.message
    if "CEL " not in message:
        return outcome
    detail = message[message.index("CEL ") :].split(" (expression:")[0]
    return Outcome(outcome.node, outcome.reason, detail)


@pytest.mark.parametrize(
    ("gates", "expected_unschedulable"),
    [
        pytest.param(
            "DRAListTypeAttributes=true",
            {"match-three", "quirk", "match-pair", "format-invalid", "distinct-pair"},
            id="DRAListTypeAttributes on: lists in CEL, constraints still scalar",
        ),
        pytest.param(
            # explicit: upstream's scheduler inherits the plane's gates first
            "DRAListTypeAttributes=false",
            {
                "includes",
                "match-three",
                "quirk",
                "match-pair",
                "format-invalid",
                "distinct-pair",
                "numeric-and-format",
                "not-shared",
            },
            id="DRAListTypeAttributes off: every selector fails on a list attribute",
        ),
        pytest.param(
            "DRAListTypeAttributes=true,DRAConsumableCapacity=false",
            {"match-three", "quirk", "match-pair", "format-invalid", "distinct-pair"},
            id="DRAConsumableCapacity off: allowMultipleAllocations still in CEL",
        ),
    ],
)
async def test_list_attributes_agree_with_upstream_kube_scheduler(
    control_plane: Cluster,
    kube: client.ApiClient,
    nodes: NodePool,
    tmp_path: Path,
    *,
    gates: str,
    expected_unschedulable: set[str],
) -> None:
    api = client.ResourceV1Api(kube)
    node = await nodes.create(make_node("lists-diff").obj())
    outcomes = await _ours_then_upstream(
        control_plane.require_plane(),
        client.CoreV1Api(kube),
        tmp_path,
        gates=gates,
        prefix="lists",
        devices_for=lambda who: ListTopology(api, node, who),
    )
    ours, upstream = (
        {name: _cel_detail(outcome) for name, outcome in run_.items()} for run_ in outcomes
    )
    assert {name for name, outcome in ours.items() if not outcome.scheduled} == (
        expected_unschedulable
    ), ours
    differ = disagreements(ours, upstream)
    assert not differ, "\n".join(differ)


class RuledTopology:
    """One node, gpu-0 and gpu-1, and a DeviceTaintRule tainting gpu-0
    (NoSchedule) for one driver; the ``run`` interface as ``ListTopology``."""

    def __init__(self, kube: client.ApiClient, node: str, who: str) -> None:
        self.api = client.ResourceV1Api(kube)
        self.rules = client.ResourceV1beta2Api(kube)
        self.node = node
        self.driver = Driver(kube)
        self.driver.name = f"{who}-{secrets.token_hex(3)}.example.com"
        self.rule = ""

    async def publish(self) -> None:
        await _publish(self.driver, self.node, [{"name": "gpu-0"}, {"name": "gpu-1"}])
        self.rule = await _taint_rule(self.rules.api_client, self.driver, "gpu-0")

    async def remove(self) -> None:
        with contextlib.suppress(client.ApiException):
            await self.rules.delete_device_taint_rule(self.rule)
        await self.driver.remove()

    def claims(self) -> list[tuple[str, dict[str, Any]]]:
        cls = self.driver.device_class
        tolerate = ({"key": "maintenance", "operator": "Exists"},)
        return [
            ("intolerant-two", make_claim("intolerant-two").request("r", cls, count=2).obj()),
            ("tolerant", make_claim("tolerant").request("r", cls, tolerations=tolerate).obj()),
        ]


@pytest.mark.parametrize(
    ("gates", "expected_unschedulable"),
    [
        pytest.param("DRADeviceTaintRules=true", {"intolerant-two"}, id="rules on"),
        # explicit: upstream's scheduler inherits the plane's gates first
        pytest.param("DRADeviceTaintRules=false", {"tolerant"}, id="rules off"),
    ],
)
async def test_device_taint_rules_agree_with_upstream_kube_scheduler(
    control_plane: Cluster,
    kube: client.ApiClient,
    nodes: NodePool,
    tmp_path: Path,
    *,
    gates: str,
    expected_unschedulable: set[str],
) -> None:
    node = await nodes.create(make_node("ruled-diff").obj())
    ours, upstream = await _ours_then_upstream(
        control_plane.require_plane(),
        client.CoreV1Api(kube),
        tmp_path,
        gates=gates,
        prefix="rules",
        devices_for=lambda who: RuledTopology(kube, node, who),
    )
    assert {name for name, outcome in ours.items() if not outcome.scheduled} == (
        expected_unschedulable
    ), ours
    differ = disagreements(ours, upstream)
    assert not differ, "\n".join(differ)
