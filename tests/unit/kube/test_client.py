"""KubeClient over real HTTP against a scripted in-process server (aiohttp.web):
status handling, headers, watch streaming and its silence timeout."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from aiohttp import web

from scheduler.kube.client import KubeClient
from scheduler.kube.connection import Connection
from scheduler.kube.errors import ApiError, TransportError, WatchTimeout
from scheduler.kube.protobuf import PROTOBUF, encode_binding
from scheduler.kube.resources import PODS
from scheduler.kube.wire import STRATEGIC_MERGE_PATCH

TOKEN = "Bearer t0k"


def status(code: int, reason: str = "", message: str = "") -> web.Response:
    body = {"kind": "Status", "apiVersion": "v1", "code": code, "reason": reason}
    body["message"] = message
    body["status"] = "Success" if code < 300 else "Failure"
    return web.json_response(body, status=code)


def event_line(type_: str, name: str, rv: str) -> bytes:
    obj = {"kind": "Pod", "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}}
    return orjson.dumps({"type": type_, "object": obj}) + b"\n"


@dataclass
class FakeApiServer:
    """What the next watch sends (chunks, then end or hang) and what requests came."""

    chunks: list[bytes] = field(default_factory=list)
    hang: bool = False
    released: asyncio.Event = field(default_factory=asyncio.Event)
    watch_status: int = 200
    refuse_protobuf: bool = False
    requests: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0

    async def pods(self, request: web.Request) -> web.StreamResponse:
        self._record(request, b"")
        if request.query.get("watch") != "true":
            return web.json_response(
                {"kind": "PodList", "metadata": {"resourceVersion": "5"}, "items": []}
            )
        if self.watch_status != 200:
            return status(self.watch_status, "Expired", "too old resource version")
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        for chunk in self.chunks:
            await response.write(chunk)
        if self.hang:
            await self.released.wait()  # until the client goes away or teardown
        return response

    async def binding(self, request: web.Request) -> web.Response:
        body = await request.read()
        self._record(request, body)
        if self.refuse_protobuf and request.content_type == PROTOBUF:
            return status(415, "UnsupportedMediaType", "the body is not JSON")
        if request.match_info["name"] == "taken":
            return status(409, "Conflict", "pod taken is already assigned to node n0")
        # The real API server answers a binding with a Status, not a Binding.
        return status(201)

    async def pod_status(self, request: web.Request) -> web.Response:
        body = await request.read()
        self._record(request, body)
        return web.json_response({"kind": "Pod", "status": orjson.loads(body)["status"]})

    async def empty(self, request: web.Request) -> web.Response:
        self._record(request, await request.read())
        return web.Response(status=200)

    def _record(self, request: web.Request, body: bytes) -> None:
        self.requests.append(
            {
                "method": request.method,
                "path": request.path,
                "query": dict(request.query),
                "headers": dict(request.headers),
                "body": body if request.content_type == PROTOBUF else orjson.loads(body or b"null"),
            }
        )


@pytest.fixture
async def server() -> AsyncIterator[FakeApiServer]:
    fake = FakeApiServer()
    app = web.Application()
    app.router.add_get("/api/v1/pods", fake.pods)
    app.router.add_post("/api/v1/namespaces/{ns}/pods/{name}/binding", fake.binding)
    app.router.add_patch("/api/v1/namespaces/{ns}/pods/{name}/status", fake.pod_status)
    app.router.add_route("*", "/empty", fake.empty)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    fake.port = runner.addresses[0][1]
    yield fake
    fake.released.set()  # a hanging handler ends, so no task outlives the test
    await runner.cleanup()


@pytest.fixture
async def client(server: FakeApiServer) -> AsyncIterator[KubeClient]:
    async def authorization() -> str:
        return TOKEN

    connection = Connection(
        host=f"http://127.0.0.1:{server.port}", ssl_context=None, authorization=authorization
    )
    kube = KubeClient.open(connection, qps=0, burst=0, user_agent="test-agent", watch_margin=0.3)
    yield kube
    await kube.close()


async def collect(client: KubeClient, into: list[dict[str, Any]] | None = None) -> list[Any]:
    seen = [] if into is None else into
    stream = client.watch(PODS, resource_version="5", timeout_seconds=0)
    async with contextlib.aclosing(stream):
        async for event in stream:
            seen.append(event)
    return seen


async def test_bind_returns_on_201_status_reply_and_sends_the_binding(
    server: FakeApiServer, client: KubeClient
) -> None:
    await client.bind("ns", "p1", "uid-1", "n1")
    [request] = server.requests
    assert request["path"] == "/api/v1/namespaces/ns/pods/p1/binding"
    assert request["body"] == encode_binding("ns", "p1", "uid-1", "n1")
    assert request["headers"]["Authorization"] == TOKEN
    assert request["headers"]["User-Agent"] == "test-agent"
    assert request["headers"]["Content-Type"] == PROTOBUF
    assert request["headers"]["Accept"].startswith(PROTOBUF)


async def test_a_server_refusing_protobuf_gets_json_from_then_on(
    server: FakeApiServer, client: KubeClient
) -> None:
    server.refuse_protobuf = True
    await client.bind("ns", "p1", "uid-1", "n1")
    await client.bind("ns", "p2", "uid-2", "n1")
    sent = [(r["headers"]["Content-Type"], r["path"].split("/")[-2]) for r in server.requests]
    assert sent == [(PROTOBUF, "p1"), ("application/json", "p1"), ("application/json", "p2")]
    assert server.requests[1]["body"]["target"]["name"] == "n1"


async def test_bind_conflict_raises_api_error_from_status(client: KubeClient) -> None:
    with pytest.raises(ApiError) as caught:
        await client.bind("ns", "taken", "uid-1", "n1")
    assert (caught.value.status, caught.value.reason) == (409, "Conflict")
    assert "already assigned" in caught.value.message


async def test_patch_pod_status_is_a_strategic_merge_patch(
    server: FakeApiServer, client: KubeClient
) -> None:
    patch = {"status": {"conditions": [{"type": "PodScheduled", "status": "False"}]}}
    result = await client.patch_pod_status("ns", "p1", patch)
    assert result["status"] == patch["status"]
    assert server.requests[0]["headers"]["Content-Type"] == STRATEGIC_MERGE_PATCH


@pytest.mark.parametrize(
    ("method", "body", "content_type"),
    [
        pytest.param("GET", None, None, id="get without body"),
        pytest.param("PATCH", {"a": 1}, "application/merge-patch+json", id="patch is merge"),
        pytest.param("POST", {"a": 1}, "application/json", id="post is json"),
    ],
)
async def test_request_by_path(
    server: FakeApiServer,
    client: KubeClient,
    method: str,
    body: Any,
    content_type: str | None,
) -> None:
    assert await client.request(method, "/empty", body) is None
    assert server.requests[0]["method"] == method
    assert server.requests[0]["headers"].get("Content-Type") == content_type


async def test_list_returns_raw_list_json(server: FakeApiServer, client: KubeClient) -> None:
    result = await client.list(PODS, limit=2, label_selector="a=b")
    assert result["metadata"]["resourceVersion"] == "5"
    assert server.requests[0]["query"] == {"limit": "2", "labelSelector": "a=b"}


async def test_watch_yields_events_across_chunk_boundaries(
    server: FakeApiServer, client: KubeClient
) -> None:
    stream = event_line("ADDED", "a", "6") + event_line("MODIFIED", "a", "7")
    error = orjson.dumps({"type": "ERROR", "object": {"kind": "Status", "code": 410}}) + b"\n"
    server.chunks = [stream[:10], stream[10:70], stream[70:], error]
    events = await collect(client)
    assert [(e["type"], e["object"].get("metadata", {}).get("name")) for e in events] == [
        ("ADDED", "a"),
        ("MODIFIED", "a"),
        ("ERROR", None),
    ]
    assert server.requests[0]["query"] == {
        "watch": "true",
        "resourceVersion": "5",
        "timeoutSeconds": "0",
        "allowWatchBookmarks": "true",
    }


async def test_silent_watch_raises_watch_timeout(server: FakeApiServer, client: KubeClient) -> None:
    server.chunks = [event_line("ADDED", "a", "6")]
    server.hang = True
    seen: list[dict[str, Any]] = []
    with pytest.raises(WatchTimeout):
        await collect(client, into=seen)
    assert len(seen) == 1


async def test_watch_refused_with_410_raises_api_error(
    server: FakeApiServer, client: KubeClient
) -> None:
    server.watch_status = 410
    with pytest.raises(ApiError) as caught:
        await collect(client)
    assert caught.value.gone


async def test_unreachable_server_raises_transport_error() -> None:
    async def authorization() -> None:
        return None

    # Port 1 on loopback: nothing listens there.
    connection = Connection(
        host="http://127.0.0.1:1", ssl_context=None, authorization=authorization
    )
    kube = KubeClient.open(connection, qps=0, burst=0, user_agent="t")
    try:
        with pytest.raises(TransportError):
            await kube.list(PODS)
        with pytest.raises(TransportError):
            await collect(kube)
    finally:
        await kube.close()


class RecordedMetrics:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str, str]] = []
        self.waits: list[tuple[str, str]] = []

    def rest_request(self, method: str, host: str, code: str, seconds: float) -> None:
        assert seconds >= 0
        self.requests.append((method, host, code))

    def rate_limiter_wait(self, verb: str, host: str, seconds: float) -> None:
        assert seconds >= 0
        self.waits.append((verb, host))


async def test_every_request_is_reported_with_code_method_and_host(
    server: FakeApiServer, client: KubeClient
) -> None:
    recorded = RecordedMetrics()
    client.report_to(recorded)
    host = f"127.0.0.1:{server.port}"

    await client.bind("ns", "p1", "uid-1", "n1")
    with pytest.raises(ApiError):
        await client.bind("ns", "taken", "uid-2", "n1")
    await collect(client)

    assert recorded.requests == [("POST", host, "201"), ("POST", host, "409"), ("GET", host, "200")]
    assert recorded.waits == [("POST", host), ("POST", host)]  # watches are not rate limited


async def test_a_request_without_an_answer_is_reported_as_error() -> None:
    async def authorization() -> str:
        return TOKEN

    connection = Connection(
        host="http://127.0.0.1:1", ssl_context=None, authorization=authorization
    )
    kube = KubeClient.open(connection, qps=0, burst=0, user_agent="t")
    recorded = RecordedMetrics()
    kube.report_to(recorded)
    try:
        with pytest.raises(TransportError):
            await kube.request("GET", "/api")
    finally:
        await kube.close()

    assert recorded.requests == [("GET", "127.0.0.1:1", "<error>")]
