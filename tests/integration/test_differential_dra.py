"""DynamicResources against upstream kube-scheduler: the same DRA workload
(counts, selectors on every attribute type, matchAttribute, prioritized
lists, device taints and tolerations) scheduled by this scheduler and by
upstream's, from the same control-plane build, agrees pod by pod on
scheduled-or-not and on the ``PodScheduled`` message, word for word, with
the 1.36 defaults and with DRA gates turned off (both schedulers given the
same ``--feature-gates``).

Devices are cluster-scoped, so each scheduler gets an identical device
topology of its own: the same nodes, but its own driver and DeviceClasses
(class selectors on the driver keep the two apart). Pods are created one at a
time, each settled before the next, so both schedulers see the same order;
the workload is built so that no outcome depends on a tie-break.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from tests.support.builders import make_node, make_pod
from tests.support.cluster import Cluster, NodePool
from tests.support.differential import (
    OURS_PROFILE,
    UPSTREAM_PROFILE,
    Outcome,
    Runner,
    disagreements,
    ours_runner,
    upstream_runner,
)
from tests.support.drabuilders import (
    Obj,
    make_claim,
    make_class,
    make_device,
    make_slice,
    pod_uses_claim,
    request,
)
from tests.support.kubeapi import condition, read_pod
from tests.support.wait import eventually

NODES = 3
TOLERATION = {"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"}


class Topology:
    """One driver's devices on the shared nodes: per node gpu-0..2 (class
    ``small``) and gpu-3 (class ``big``); gpu-0 of the last node is tainted."""

    def __init__(self, api: client.ResourceV1Api, nodes: list[str], who: str) -> None:
        self.api = api
        self.nodes = nodes
        self.driver = f"{who}-{secrets.token_hex(3)}.example.com"
        self.small = f"small-{self.driver}"
        self.big = f"big-{self.driver}"
        self.created: list[tuple[str, str]] = []

    async def publish(self) -> None:
        for name, model in ((self.small, "small"), (self.big, "big")):
            body = (
                make_class(name)
                .driver(self.driver)
                .selector(f'device.attributes["{self.driver}"].model == "{model}"')
            )
            await self.api.create_device_class(body.obj())
            self.created.append(("class", name))
        for index, node in enumerate(self.nodes):
            devices = []
            for j in range(4):
                device = (
                    make_device(f"gpu-{j}")
                    .attr("model", "big" if j == 3 else "small")
                    .attr("numa", j // 2)
                    .attr("driverVersion", f"1.{j}.0", kind="version")
                    .attr("tainted", index == len(self.nodes) - 1 and j == 0)
                    .capacity("memory", f"{(j + 1) * 10}Gi")
                )
                if index == len(self.nodes) - 1 and j == 0:
                    device = device.taint("maintenance", "NoSchedule")
                devices.append(device)
            body = make_slice(f"{node}-{self.driver}").driver(self.driver).pool(node).node(node)
            obj = body.device(*devices).obj()
            obj["metadata"].pop("resourceVersion")
            await self.api.create_resource_slice(obj)
            self.created.append(("slice", obj["metadata"]["name"]))

    async def remove(self) -> None:
        for kind, name in self.created:
            with contextlib.suppress(client.ApiException):
                if kind == "class":
                    await self.api.delete_device_class(name)
                else:
                    await self.api.delete_resource_slice(name)

    def claims(self) -> list[tuple[str, Obj]]:
        """(pod name, claim) in creation order; unschedulable ones first where
        a schedulable one could otherwise take their devices."""
        d = self.driver
        attr = f'device.attributes["{d}"]'
        return [
            (
                "numa-pair",
                # never the tainted device, so that with DRADeviceTaints off
                # it is still the "intolerant" pod that takes it
                make_claim("numa-pair")
                .request("r", self.small, count=2, selectors=(f"!{attr}.tainted",))
                .match(f"{d}/numa")
                .obj(),
            ),
            (
                "numa-three",
                make_claim("numa-three").request("r", self.small, count=3).match(f"{d}/numa").obj(),
            ),
            ("five", make_claim("five").request("r", self.small, count=5).obj()),
            (
                "no-match",
                make_claim("no-match")
                .request("r", self.small, selectors=(f'{attr}.model == "huge"',))
                .obj(),
            ),
            (
                "intolerant",
                make_claim("intolerant")
                .request("r", self.small, selectors=(f"{attr}.tainted",))
                .obj(),
            ),
            (
                "tolerant",
                make_claim("tolerant")
                .request("r", self.small, selectors=(f"{attr}.tainted",), tolerations=(TOLERATION,))
                .obj(),
            ),
            ("single", make_claim("single").request("r", self.small).obj()),
            ("two", make_claim("two").request("r", self.small, count=2).obj()),
            (
                "first-available",
                make_claim("first-available")
                .first_available(
                    "r", request("many", self.small, count=5), request("one", self.small)
                )
                .obj(),
            ),
            ("big-two", make_claim("big-two").request("r", self.big, count=2).obj()),
            ("big", make_claim("big").request("r", self.big).obj()),
            (
                "memory",
                make_claim("memory")
                .request(
                    "r",
                    self.big,
                    selectors=(f'device.capacity["{d}"].memory.compareTo(quantity("35Gi")) >= 0',),
                )
                .obj(),
            ),
            (
                "version",
                make_claim("version")
                .request(
                    "r",
                    self.big,
                    selectors=(f'{attr}.driverVersion.isGreaterThan(semver("1.2.5"))',),
                )
                .obj(),
            ),
        ]


@contextlib.asynccontextmanager
async def topology(
    api: client.ResourceV1Api, nodes: list[str], who: str
) -> AsyncIterator[Topology]:
    devices = Topology(api, nodes, who)
    try:
        await devices.publish()
        yield devices
    finally:
        await devices.remove()


async def run(
    core: client.CoreV1Api,
    devices: Topology,
    namespace: str,
    scheduler_name: str,
    runner: Runner,
) -> dict[str, Outcome]:
    outcomes: dict[str, Outcome] = {}
    async with runner():
        for pod_name, claim in devices.claims():
            claim["metadata"]["namespace"] = namespace
            claim["metadata"].pop("uid")
            await devices.api.create_namespaced_resource_claim(namespace, claim)
            pod = pod_uses_claim(
                make_pod(pod_name, namespace).scheduler(scheduler_name).obj(),
                "gpu",
                claim["metadata"]["name"],
            )
            await core.create_namespaced_pod(namespace, pod)

            async def settled(pod_name: str = pod_name) -> Outcome | None:
                found = await read_pod(core, namespace, pod_name)
                if found["spec"].get("nodeName"):
                    return Outcome(found["spec"]["nodeName"], "", "")
                told = condition(found, "PodScheduled") or {}
                if told.get("status") == "False" and told.get("message"):
                    # claim keys name each scheduler's own namespace
                    message = told["message"].replace(f"{namespace}/", "<namespace>/")
                    return Outcome("", told.get("reason", ""), message)
                return None

            outcomes[pod_name] = await eventually(
                settled, timeout=60, what=f"{namespace}/{pod_name} settled"
            )
    return outcomes


DEFAULT_UNSCHEDULABLE = {"numa-three", "five", "no-match", "intolerant", "big-two"}


@pytest.mark.parametrize(
    ("gates", "expected_unschedulable"),
    [
        pytest.param("", DEFAULT_UNSCHEDULABLE, id="v1.36 defaults"),
        pytest.param(
            # firstAvailable refused in PreFilter; with consumable capacity and
            # binding conditions off upstream runs its stable allocator.
            "DRAPrioritizedList=false,DRAConsumableCapacity=false,DRADeviceBindingConditions=false",
            DEFAULT_UNSCHEDULABLE | {"first-available"},
            id="DRAPrioritizedList, DRAConsumableCapacity, DRADeviceBindingConditions off",
        ),
        pytest.param(
            # the taint ignored: "intolerant" takes the one tainted device
            # that "tolerant" then lacks
            "DRADeviceTaints=false",
            (DEFAULT_UNSCHEDULABLE - {"intolerant"}) | {"tolerant"},
            id="DRADeviceTaints off",
        ),
    ],
)
async def test_dra_workload_agrees_with_upstream_kube_scheduler(
    control_plane: Cluster,
    kube: client.ApiClient,
    nodes: NodePool,
    tmp_path: Path,
    *,
    gates: str,
    expected_unschedulable: set[str],
) -> None:
    plane = control_plane.require_plane()
    core = client.CoreV1Api(kube)
    api = client.ResourceV1Api(kube)
    names = [await nodes.create(make_node(f"dra-diff-{i}").obj()) for i in range(NODES)]
    tag = secrets.token_hex(3)
    namespaces = (f"dra-ours-{tag}", f"dra-upstream-{tag}")
    for namespace in namespaces:
        await core.create_namespace({"metadata": {"name": namespace}})
    try:
        async with topology(api, names, "ours") as ours_devices:
            ours = await run(
                core,
                ours_devices,
                namespaces[0],
                OURS_PROFILE,
                ours_runner(plane.kubeconfig, gates),
            )
        async with topology(api, names, "upstream") as upstream_devices:
            upstream = await run(
                core,
                upstream_devices,
                namespaces[1],
                UPSTREAM_PROFILE,
                upstream_runner(plane, tmp_path, gates),
            )
    finally:
        for namespace in namespaces:
            await core.delete_namespace(namespace, propagation_policy="Background")
    assert {name for name, outcome in ours.items() if not outcome.scheduled} == (
        expected_unschedulable
    ), ours
    differ = disagreements(ours, upstream)
    assert not differ, "\n".join(differ)
