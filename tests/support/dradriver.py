"""A small simulated DRA driver for integration tests: it publishes a
DeviceClass and one ResourceSlice per node (pool = node name, devices
``gpu-0``...), as upstream's scheduler_perf ``createResourceDriver`` does,
with names unique per test since these objects are cluster-scoped."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator
from typing import Any

from kubernetes_asyncio import client

from tests.support.drabuilders import make_claim, make_class, make_slice
from tests.support.kubeapi import read_json


class Driver:
    """Publishes one DeviceClass and per-node ResourceSlices; removes them after."""

    def __init__(self, kube: client.ApiClient) -> None:
        self.api = client.ResourceV1Api(kube)
        self.name = f"gpu-{secrets.token_hex(3)}.example.com"
        self.device_class = f"class-{secrets.token_hex(3)}"
        self.slices: list[str] = []

    async def publish(self, nodes: list[str], devices: int) -> None:
        await self.api.create_device_class(make_class(self.device_class).driver(self.name).obj())
        for node in nodes:
            builder = make_slice(f"{node}-{self.name}").driver(self.name).pool(node).node(node)
            for index in range(devices):
                builder = builder.device(f"gpu-{index}")
            body = builder.obj()
            body["metadata"].pop("resourceVersion")
            await self.api.create_resource_slice(body)
            self.slices.append(f"{node}-{self.name}")

    async def remove(self) -> None:
        for name in self.slices:
            with contextlib.suppress(client.ApiException):
                await self.api.delete_resource_slice(name)
        with contextlib.suppress(client.ApiException):
            await self.api.delete_device_class(self.device_class)

    async def template(self, namespace: str, name: str = "gpu") -> None:
        spec = make_claim(name).request("gpu", self.device_class).obj()["spec"]
        await self.api.create_namespaced_resource_claim_template(
            namespace,
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"spec": spec},
            },
        )

    async def claims(self, namespace: str) -> list[dict[str, Any]]:
        listed = await read_json(
            await self.api.list_namespaced_resource_claim(namespace, _preload_content=False)
        )
        items: list[dict[str, Any]] = listed["items"]
        return items


@contextlib.asynccontextmanager
async def simulated_driver(kube: client.ApiClient) -> AsyncIterator[Driver]:
    driver = Driver(kube)
    try:
        yield driver
    finally:
        await driver.remove()


def allocated_devices(claims: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [
        (r["driver"], r["pool"], r["device"])
        for claim in claims
        for r in ((claim.get("status") or {}).get("allocation") or {})
        .get("devices", {})
        .get("results", [])
    ]
