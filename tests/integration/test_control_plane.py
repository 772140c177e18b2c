"""The local control plane is a real Kubernetes API: objects persist with their
status, subresources work, the resourceclaim controller runs, watches deliver
bookmarks and survive an apiserver restart.

(Periodic bookmarks on a plain watch come about once a minute from the watch
cache; the test relies on the immediate initial-events-end bookmark instead.)"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.support.builders import make_node, make_pod
from tests.support.cluster import Cluster
from tests.support.wait import eventually


async def _json(response: Any) -> Any:
    async with response:
        return orjson.loads(await response.read())


async def test_node_created_with_status_keeps_capacity_and_gets_allocatable(
    kube: client.ApiClient,
) -> None:
    core = client.CoreV1Api(kube)
    node = make_node("cp-node-status").capacity(cpu="8", memory="16Gi", pods="110").obj()
    await core.create_node(node)
    try:
        stored = await _json(await core.read_node("cp-node-status", _preload_content=False))
        assert stored["status"]["capacity"] == {"cpu": "8", "memory": "16Gi", "pods": "110"}
        assert stored["status"]["allocatable"] == stored["status"]["capacity"]
        assert not stored["spec"].get("taints"), "no not-ready taint: nodes have no kubelet"
    finally:
        await core.delete_node("cp-node-status")


async def test_binding_subresource_sets_node_name(kube: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(kube)
    await core.create_namespaced_pod(namespace, make_pod("bind-me", namespace).obj())
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "bind-me", "namespace": namespace},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "some-node"},
    }
    response = await core.create_namespaced_pod_binding(
        "bind-me", namespace, binding, _preload_content=False
    )
    async with response:
        assert response.status == 201
    pod = await _json(await core.read_namespaced_pod("bind-me", namespace, _preload_content=False))
    assert pod["spec"]["nodeName"] == "some-node"


async def test_resourceclaim_controller_creates_claim_from_template(
    kube: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(kube)
    resource = client.ResourceV1Api(kube)
    await resource.create_namespaced_resource_claim_template(
        namespace,
        {
            "metadata": {"name": "gpu", "namespace": namespace},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [
                            {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}
                        ]
                    }
                }
            },
        },
    )
    pod = make_pod("with-claim", namespace).claim_template("accel", "gpu").obj()
    await core.create_namespaced_pod(namespace, pod)

    async def claim_status() -> list[dict[str, str]] | None:
        stored = await _json(
            await core.read_namespaced_pod("with-claim", namespace, _preload_content=False)
        )
        statuses: list[dict[str, str]] | None = stored.get("status", {}).get(
            "resourceClaimStatuses"
        )
        return statuses

    statuses = await eventually(claim_status, what="pod.status.resourceClaimStatuses set")
    assert statuses[0]["name"] == "accel"
    claim = await _json(
        await resource.read_namespaced_resource_claim(
            statuses[0]["resourceClaimName"], namespace, _preload_content=False
        )
    )
    owner = claim["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"]) == ("Pod", "with-claim")
    assert claim["spec"]["devices"]["requests"][0]["name"] == "gpu"


@contextlib.asynccontextmanager
async def _pod_watch(
    kube: client.ApiClient, namespace: str, **params: Any
) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
    core = client.CoreV1Api(kube)
    response = await core.list_namespaced_pod(
        namespace, watch=True, allow_watch_bookmarks=True, _preload_content=False, **params
    )

    async def events() -> AsyncIterator[dict[str, Any]]:
        async for line in response.content:
            if line.strip():
                yield orjson.loads(line)

    async with response:
        yield events()


async def test_watch_list_ends_initial_events_with_a_bookmark(
    kube: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(kube)
    await core.create_namespaced_pod(namespace, make_pod("seen", namespace).obj())
    async with _pod_watch(
        kube, namespace, send_initial_events=True, resource_version_match="NotOlderThan"
    ) as events:
        first = await anext(events)
        assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "seen")
        bookmark = await anext(events)
    assert bookmark["type"] == "BOOKMARK"
    annotations = bookmark["object"]["metadata"]["annotations"]
    assert annotations["k8s.io/initial-events-end"] == "true"
    assert bookmark["object"]["metadata"]["resourceVersion"]


class _ResumingPodWatcher:
    """A minimal list-then-watch loop: resume from the last resourceVersion
    after a broken connection, relist on 410 Gone. Records pod names seen."""

    def __init__(self, kube: client.ApiClient, namespace: str) -> None:
        self._core = client.CoreV1Api(kube)
        self._namespace = namespace
        self.seen: set[str] = set()
        self.watches_ended = 0
        self.relists = 0
        self.synced = asyncio.Event()

    async def run(self) -> None:
        resource_version = await self._relist()
        while True:
            try:
                resource_version = await self._watch(resource_version)
            except ApiException as error:
                if error.status == 410:
                    self.relists += 1
                    resource_version = await self._relist()
                    continue
                await asyncio.sleep(0.2)
            except (aiohttp.ClientError, OSError, TimeoutError):  # connection broke
                await asyncio.sleep(0.2)
            finally:
                self.watches_ended += 1

    async def _relist(self) -> str:
        while True:
            try:
                listed = await _json(
                    await self._core.list_namespaced_pod(self._namespace, _preload_content=False)
                )
            except (ApiException, aiohttp.ClientError, OSError):  # down: retry until back
                await asyncio.sleep(0.2)
                continue
            self.seen.update(item["metadata"]["name"] for item in listed["items"])
            self.synced.set()
            return str(listed["metadata"]["resourceVersion"])

    async def _watch(self, resource_version: str) -> str:
        response = await self._core.list_namespaced_pod(
            self._namespace,
            watch=True,
            allow_watch_bookmarks=True,
            resource_version=resource_version,
            timeout_seconds=30,
            _preload_content=False,
        )
        async with response:
            async for line in response.content:
                event = orjson.loads(line)
                if event["type"] == "ERROR":
                    raise ApiException(status=event["object"].get("code", 500))
                metadata = event["object"]["metadata"]
                resource_version = metadata["resourceVersion"]
                if event["type"] in ("ADDED", "MODIFIED"):
                    self.seen.add(metadata["name"])
        return resource_version


async def test_watch_resumes_after_apiserver_restart(
    control_plane: Cluster, kube: client.ApiClient, namespace: str
) -> None:
    plane = control_plane.require_plane()
    core = client.CoreV1Api(kube)
    watcher = _ResumingPodWatcher(kube, namespace)
    task = asyncio.create_task(watcher.run())
    try:
        await asyncio.wait_for(watcher.synced.wait(), timeout=10)
        await core.create_namespaced_pod(namespace, make_pod("before", namespace).obj())

        async def seen_before() -> bool:
            return "before" in watcher.seen

        await eventually(seen_before, what="pod created before the restart is watched")

        await asyncio.to_thread(plane.restart_apiserver)
        await core.create_namespaced_pod(namespace, make_pod("after", namespace).obj())

        async def seen_after() -> bool:
            return "after" in watcher.seen

        await eventually(seen_after, what="pod created after the restart is watched")
        assert watcher.watches_ended >= 1, "the restart should have ended the first watch"
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
