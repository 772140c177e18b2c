"""Informers against the real control plane: list then watch, and recovery
after the API server goes away. (410 handling is proven with a scripted client
in tests/unit/informers: the fixture's etcd compacts too rarely to force it.)"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from scheduler.informers import InformerFactory, ReflectorOptions
from scheduler.informers.informer import Informer
from scheduler.kube.client import KubeClient
from scheduler.kube.resources import PODS
from tests.support.builders import make_pod
from tests.support.cluster import Cluster
from tests.support.wait import eventually

# Reconnect quickly: the restart test should not wait out a 30 s backoff.
FAST = ReflectorOptions(backoff_initial=0.2, backoff_cap=1.0, backoff_jitter=0.0)


@pytest.fixture(scope="session")
def plane_thread() -> Iterator[ThreadPoolExecutor]:
    """A thread that lives for the session, to restart the apiserver from.

    Not ``asyncio.to_thread``: control-plane children are started with
    PR_SET_PDEATHSIG, which fires when the *thread* that forked them exits, and
    the default executor's threads end with each test's event loop, so a
    restarted apiserver would be killed right after the test."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="control-plane") as pool:
        yield pool


@pytest.fixture
async def kube_client(control_plane: Cluster) -> AsyncIterator[KubeClient]:
    kube = await KubeClient.connect(
        kubeconfig=str(control_plane.kubeconfig), qps=100, burst=200, user_agent="informer-test"
    )
    yield kube
    await kube.close()


async def create_pod(kube_client: KubeClient, namespace: str, name: str) -> None:
    await kube_client.request(
        "POST", PODS.collection_path(namespace), make_pod(name, namespace).obj()
    )


async def delete_pod(kube_client: KubeClient, namespace: str, name: str) -> None:
    await kube_client.request(
        "DELETE", PODS.object_path(name, namespace), {"gracePeriodSeconds": 0}
    )


class Seen:
    """Handler calls by pod name."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def add(self, obj: dict[str, Any]) -> None:
        self.calls.append(("add", obj["metadata"]["name"]))

    def update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.calls.append(("update", new["metadata"]["name"]))

    def delete(self, obj: dict[str, Any]) -> None:
        self.calls.append(("delete", obj["metadata"]["name"]))


@contextlib.asynccontextmanager
async def running(factory: InformerFactory) -> AsyncIterator[None]:
    task = asyncio.create_task(factory.run(), name="test-informers")
    try:
        await asyncio.wait_for(factory.wait_synced(), timeout=30)
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def pods_informer(factory: InformerFactory, namespace: str, seen: Seen) -> Informer:
    informer = factory.informer(PODS, field_selector=f"metadata.namespace={namespace}")
    informer.add_handler(seen.add, seen.update, seen.delete)
    return informer


async def until_store_holds(informer: Informer, names: set[str]) -> None:
    async def holds() -> bool:
        return {o["metadata"]["name"] for o in informer.store.list()} == names

    await eventually(holds, what=f"the store holds exactly {sorted(names)}")


async def test_informer_lists_then_sees_adds_updates_and_deletes(
    kube_client: KubeClient, namespace: str
) -> None:
    await create_pod(kube_client, namespace, "before")
    factory = InformerFactory(kube_client, options=FAST)
    seen = Seen()
    informer = pods_informer(factory, namespace, seen)
    async with running(factory):
        assert seen.calls == [("add", "before")]
        stored = informer.store.get(f"{namespace}/before")
        assert stored is not None
        assert (stored["kind"], stored["apiVersion"]) == ("Pod", "v1")

        await create_pod(kube_client, namespace, "after")
        await kube_client.request(
            "PATCH", PODS.object_path("after", namespace), {"metadata": {"labels": {"x": "y"}}}
        )
        await delete_pod(kube_client, namespace, "before")
        await until_store_holds(informer, {"after"})

        async def labelled() -> bool:
            obj = informer.store.get(f"{namespace}/after")
            return bool(obj and obj["metadata"].get("labels", {}).get("x") == "y")

        await eventually(labelled, what="the label update is in the store")
    # Deleting a pod may first show as an update (deletionTimestamp set).
    assert [call for call in seen.calls if call[0] != "update"] == [
        ("add", "before"),
        ("add", "after"),
        ("delete", "before"),
    ]
    assert ("update", "after") in seen.calls
    assert informer.stats.lists == 1


async def test_informer_recovers_after_apiserver_restart_without_duplicate_events(
    control_plane: Cluster,
    plane_thread: ThreadPoolExecutor,
    kube_client: KubeClient,
    namespace: str,
) -> None:
    plane = control_plane.require_plane()
    await create_pod(kube_client, namespace, "old")
    factory = InformerFactory(kube_client, options=FAST)
    seen = Seen()
    informer = pods_informer(factory, namespace, seen)
    async with running(factory):
        watches_before = informer.stats.watches
        await asyncio.get_running_loop().run_in_executor(plane_thread, plane.restart_apiserver)
        await create_pod(kube_client, namespace, "new")
        await delete_pod(kube_client, namespace, "old")
        await until_store_holds(informer, {"new"})
        assert informer.stats.watches > watches_before, "the restart should end the watch"
    # Whether the informer resumed from its resourceVersion or had to relist
    # (410 from the fresh watch cache), each change is delivered exactly once.
    assert [call for call in seen.calls if call[0] != "update"] == [
        ("add", "old"),
        ("add", "new"),
        ("delete", "old"),
    ]
