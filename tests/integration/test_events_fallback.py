"""Events fall back to core/v1 when events.k8s.io is refused: the real API
server accepts the core/v1 Events (and their series patches) the sink writes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubernetes_asyncio import client

from scheduler.framework.clock import RealClock
from scheduler.kube.client import KubeClient
from scheduler.kube.errors import ApiError
from scheduler.kube.events import EventSink, EventType
from tests.support.builders import make_pod
from tests.support.cluster import Cluster
from tests.support.kubeapi import read_json


class RefusesEventsV1:
    """The real client, except that events.k8s.io answers 403 (as RBAC would)."""

    def __init__(self, kube: KubeClient) -> None:
        self._kube = kube

    async def create_event(self, namespace: str, event: Mapping[str, Any]) -> None:
        raise ApiError(403, "Forbidden", "events.events.k8s.io is forbidden")

    async def patch_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        raise ApiError(403, "Forbidden", "events.events.k8s.io is forbidden")

    async def create_core_event(self, namespace: str, event: Mapping[str, Any]) -> None:
        await self._kube.create_core_event(namespace, event)

    async def patch_core_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        await self._kube.patch_core_event(namespace, name, patch)


async def test_core_v1_events_are_accepted_by_the_api_server(
    control_plane: Cluster, kube: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(kube)
    created = await read_json(
        await core.create_namespaced_pod(
            namespace, make_pod("p", namespace).obj(), _preload_content=False
        )
    )
    real = await KubeClient.connect(
        kubeconfig=str(control_plane.kubeconfig), qps=50, burst=100, user_agent="test"
    )
    try:
        sink = EventSink(RefusesEventsV1(real), hostname="h", clock=RealClock(), series_refresh=0.0)
        recorder = sink.recorder("pysched-events")
        for _ in range(2):
            recorder.event(created, EventType.WARNING, "FailedScheduling", "Scheduling", "why")
        await sink.drain()
        await sink.drain()  # the series count, due at once
    finally:
        await real.close()

    assert sink.core_v1
    assert sink.failed == 0
    listed = await read_json(await core.list_namespaced_event(namespace, _preload_content=False))
    (event,) = [e for e in listed["items"] if e["reason"] == "FailedScheduling"]
    assert event["involvedObject"]["uid"] == created["metadata"]["uid"]
    assert event["source"]["component"] == "pysched-events"
    assert event["message"] == "why"
    assert event["count"] == 2
