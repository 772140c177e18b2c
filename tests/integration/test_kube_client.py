"""KubeClient against the real control plane: binding, status patches, events
(with series) and priority rate limiting."""

from __future__ import annotations

import asyncio
import secrets
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from scheduler.framework.clock import RealClock
from scheduler.kube.client import KubeClient
from scheduler.kube.errors import ApiError
from scheduler.kube.events import EventSink, EventType, object_reference
from scheduler.kube.protobuf import PROTOBUF, encode_event
from scheduler.kube.resources import EVENTS, NODES, PODS
from tests.support.builders import make_node, make_pod
from tests.support.cluster import Cluster
from tests.support.wait import eventually


async def connect(cluster: Cluster, qps: float = 100, burst: int = 200) -> KubeClient:
    return await KubeClient.connect(
        kubeconfig=str(cluster.kubeconfig), qps=qps, burst=burst, user_agent="kube-client-test"
    )


@pytest.fixture
async def kube_client(control_plane: Cluster) -> AsyncIterator[KubeClient]:
    kube = await connect(control_plane)
    yield kube
    await kube.close()


@pytest.fixture
async def node(kube_client: KubeClient) -> AsyncIterator[str]:
    name = f"n-{secrets.token_hex(4)}"
    await kube_client.request("POST", NODES.collection_path(), make_node(name).obj())
    yield name
    await kube_client.request("DELETE", NODES.object_path(name))


async def create_pod(kube_client: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    created = await kube_client.request(
        "POST", PODS.collection_path(namespace), make_pod(name, namespace).obj()
    )
    assert isinstance(created, dict)
    return created


async def test_bind_sets_node_name_and_returns_without_raising(
    kube_client: KubeClient, namespace: str, node: str
) -> None:
    pod = await create_pod(kube_client, namespace, "p")
    await kube_client.bind(namespace, "p", pod["metadata"]["uid"], node)
    bound = await kube_client.request("GET", PODS.object_path("p", namespace))
    assert bound["spec"]["nodeName"] == node
    conditions = {c["type"]: c["status"] for c in bound["status"].get("conditions", [])}
    assert conditions.get("PodScheduled") == "True"


@pytest.mark.parametrize(
    ("uid_of", "bind_first"),
    [
        pytest.param(lambda pod: pod["metadata"]["uid"], True, id="pod already bound"),
        pytest.param(lambda pod: "not-the-uid", False, id="pod uid changed"),
    ],
)
async def test_bind_conflict_raises_409(
    kube_client: KubeClient, namespace: str, node: str, uid_of: Any, bind_first: bool
) -> None:
    pod = await create_pod(kube_client, namespace, "p")
    if bind_first:
        await kube_client.bind(namespace, "p", pod["metadata"]["uid"], node)
    with pytest.raises(ApiError) as caught:
        await kube_client.bind(namespace, "p", uid_of(pod), node)
    # The answer is a protobuf Status (the client accepts protobuf for binds).
    assert (caught.value.status, caught.value.reason) == (409, "Conflict")
    assert '"p"' in caught.value.message


async def test_patch_pod_status_writes_the_pod_scheduled_condition(
    kube_client: KubeClient, namespace: str
) -> None:
    await create_pod(kube_client, namespace, "p")
    condition = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/1 nodes are available: 1 Insufficient cpu.",
    }
    updated = await kube_client.patch_pod_status(
        namespace, "p", {"status": {"conditions": [condition]}}
    )
    [written] = [c for c in updated["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert {k: written[k] for k in condition} == condition


async def test_create_event_shows_up_in_events_list(
    kube_client: KubeClient, namespace: str
) -> None:
    pod = await create_pod(kube_client, namespace, "p")
    sink = EventSink(kube_client, hostname=socket.gethostname(), clock=RealClock())
    recorder = sink.recorder("test-scheduler")
    recorder.event(pod, EventType.WARNING, "FailedScheduling", "Scheduling", "x" * 2000)
    recorder.event(pod, EventType.WARNING, "FailedScheduling", "Scheduling", "x" * 2000)
    await sink.drain()
    assert (sink.written, sink.failed) == (2, 0)
    events = await kube_client.list(EVENTS, namespace=namespace)
    [event] = events["items"]
    assert event["reportingController"] == "test-scheduler"
    assert event["reportingInstance"] == f"test-scheduler-{socket.gethostname()}"
    assert event["regarding"]["uid"] == pod["metadata"]["uid"]
    assert (event["type"], event["reason"], event["action"]) == (
        "Warning",
        "FailedScheduling",
        "Scheduling",
    )
    assert event["note"] == "x" * 1020 + " ..."
    assert event["series"]["count"] == 2


async def test_an_event_sent_as_protobuf_is_stored_as_the_same_event_sent_as_json(
    kube_client: KubeClient, namespace: str
) -> None:
    pod = await create_pod(kube_client, namespace, "p")
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "eventTime": "2026-12-01T10:20:30.123456Z",
        "series": {"count": 3, "lastObservedTime": "2026-12-01T10:21:00.654321Z"},
        "reportingController": "pyscheduler",
        "reportingInstance": "pyscheduler-host",
        "action": "Binding",
        "reason": "Scheduled",
        "type": "Normal",
        "note": "Successfully assigned ä/p to node-1",
        "regarding": object_reference(pod),
    }
    path = EVENTS.collection_path(namespace)
    as_json = {**event, "metadata": {"name": "as-json"}}
    as_protobuf = encode_event({**event, "metadata": {"name": "as-protobuf"}})
    await kube_client.request("POST", path, as_json)
    await kube_client.request("POST", path, as_protobuf, PROTOBUF)

    def stored(name: str) -> dict[str, Any]:
        [item] = [e for e in listed["items"] if e["metadata"]["name"] == name]
        return {k: v for k, v in item.items() if k != "metadata"}

    listed = await kube_client.list(EVENTS, namespace=namespace)
    assert stored("as-json")["series"] == {
        "count": 3,
        "lastObservedTime": "2026-12-01T10:21:00.654321Z",
    }
    assert stored("as-protobuf") == stored("as-json")


async def test_rate_limiter_lets_binds_through_ahead_of_queued_events(
    control_plane: Cluster, kube_client: KubeClient, namespace: str, node: str
) -> None:
    pod = await create_pod(kube_client, namespace, "p")
    # 5 requests/s, one at a time: six events queue up before the bind is asked for.
    slow = await connect(control_plane, qps=5, burst=1)
    finished: list[str] = []

    async def write_event(i: int) -> None:
        await slow.create_event(
            namespace,
            {
                "metadata": {"name": f"e{i}", "namespace": namespace},
                "eventTime": "2026-01-01T00:00:00.000000Z",
                "reportingController": "test",
                "reportingInstance": "test-1",
                "action": "Testing",
                "reason": "Test",
                "type": "Normal",
                "regarding": {"kind": "Pod", "name": "p", "namespace": namespace},
            },
        )
        finished.append(f"event-{i}")

    async def bind() -> None:
        await slow.bind(namespace, "p", pod["metadata"]["uid"], node)
        finished.append("bind")

    try:
        async with asyncio.TaskGroup() as group:
            for i in range(6):
                group.create_task(write_event(i))

            async def events_queued() -> bool:
                return slow.limiter.queued() == 5

            await eventually(events_queued, what="five events waiting for tokens")
            group.create_task(bind())
    finally:
        await slow.close()
    assert finished.index("bind") <= 1, finished
    assert len(finished) == 7


async def test_connections_are_reused_across_bursts_of_concurrent_requests(
    control_plane: Cluster,
) -> None:
    kube = await connect(control_plane, qps=0, burst=0)
    try:

        async def burst() -> None:
            await asyncio.gather(
                *(
                    kube.request("GET", NODES.collection_path(), query={"limit": "1"})
                    for _ in range(20)
                )
            )

        await burst()
        opened = kube.connections_opened
        assert 1 <= opened <= 20
        for _ in range(5):
            await burst()
        # Steady state: the pool keeps the connections alive, no new TLS handshakes.
        assert kube.connections_opened == opened
    finally:
        await kube.close()
