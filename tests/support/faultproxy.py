"""A loopback HTTP proxy in front of kube-apiserver that injects faults.

The scheduler under test connects to ``http://127.0.0.1:<port>`` (no TLS, no
credentials: ``write_kubeconfig``); the proxy forwards every request to the
real API server as the admin and streams watches through. The test turns
faults on and off while the scheduler runs:

- ``delay[kind]``: hold each request of that kind (binds, status patches,
  events) before forwarding it, so binds stay in flight as long as the test
  needs;
- ``fail_every[kind] = n``: answer every n-th request of that kind with a 500
  ``Status`` instead of forwarding it;
- ``conflict_every = n``: before forwarding every n-th bind, bind the pod
  itself (someone else won the race), alternately to the node the scheduler
  chose and to ``conflict_node`` (if set); the scheduler's bind then gets 409;
- ``fail_lease_writes``: answer every Lease write (acquire, renew, release)
  with a 500, so a leader loses its lease while everything else works;
- ``block_reads()`` / ``unblock_reads()``: end every watch stream and answer
  lists and watches with 503 until unblocked, so the scheduler's informers
  lose their watches while writes still get through.

It records what the test needs to judge the outcome: every bind with its
answer (``binds``), when each bind request arrived (``bind_arrivals``, wall
time and pod), binds in flight now (``binds_in_flight``), and the number
of faults injected per kind (``injected``). A request that cannot reach the
API server (restarting) is answered 503, as a load balancer would.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import ssl
import time
from collections import Counter
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import aiohttp
import orjson
import yaml
from aiohttp import web

from scheduler.kube.protobuf import MAGIC, read_fields
from scheduler.kube.wire import binding_body

_BINDING = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding$")
_POD_STATUS = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/status$")
_LEASE = re.compile(r"^/apis/coordination\.k8s\.io/v1/namespaces/[^/]+/leases(/[^/]+)?$")
_HOP_HEADERS = {"content-type", "accept", "user-agent", "content-encoding"}


def _bound_node(body: bytes) -> str:
    """The node a binding request names, sent as protobuf or as JSON."""
    if body.startswith(MAGIC):
        data = body[len(MAGIC) :]
        for number in (2, 2, 3):  # Unknown.raw, then Binding.target, then its name
            value = read_fields(data).get(number, b"")
            assert isinstance(value, bytes)
            data = value
        return data.decode()
    return str((orjson.loads(body).get("target") or {}).get("name", ""))


def _event_name(body: bytes) -> str:
    """The name of the event a create request carries (protobuf or JSON);
    empty for anything else (a patch, an unreadable body)."""
    try:
        if body.startswith(MAGIC):
            raw = read_fields(body[len(MAGIC) :]).get(2, b"")
            assert isinstance(raw, bytes)
            metadata = read_fields(raw).get(1, b"")
            assert isinstance(metadata, bytes)
            name = read_fields(metadata).get(1, b"")
            return name.decode() if isinstance(name, bytes) else ""
        return str((orjson.loads(body).get("metadata") or {}).get("name", ""))
    except (ValueError, AssertionError, AttributeError):
        return ""


class Kind(StrEnum):
    BIND = "bind"
    STATUS = "status"
    EVENT = "event"
    WATCH = "watch"
    LIST = "list"
    LEASE = "lease"
    REVIEW = "review"  # TokenReview / SubjectAccessReview (the ops port's checks)
    OTHER = "other"


def classify(method: str, path: str, query: dict[str, str]) -> Kind:
    if method == "POST" and _BINDING.match(path):
        return Kind.BIND
    if "/apis/coordination.k8s.io/" in path and "/leases" in path and method != "GET":
        return Kind.LEASE
    if method == "POST" and path.endswith(("/tokenreviews", "/subjectaccessreviews")):
        return Kind.REVIEW
    if method in ("PATCH", "PUT") and _POD_STATUS.match(path):
        return Kind.STATUS
    if method in ("POST", "PATCH", "PUT") and "/events" in path:
        return Kind.EVENT
    if method == "GET":
        if query.get("watch") in ("true", "1"):
            return Kind.WATCH
        if path.endswith(("/pods", "/nodes")) or path.rsplit("/", 1)[-1] in ("pods", "nodes"):
            return Kind.LIST
    return Kind.OTHER


@dataclass(frozen=True)
class BindRecord:
    pod: str  # namespace/name
    node: str
    status: int
    injected: bool = False  # answered by the proxy, never reached the API
    arrived: int = 0  # the proxy's bind count when the request arrived
    finished: float = 0.0  # time.monotonic() when the answer came


def _status(code: int, reason: str, message: str) -> web.Response:
    return web.Response(
        status=code, body=_status_bytes(code, reason, message), content_type="application/json"
    )


def _status_bytes(code: int, reason: str, message: str) -> bytes:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return orjson.dumps(body)


class FaultProxy:
    def __init__(self, admin_kubeconfig: Path) -> None:
        config = yaml.safe_load(admin_kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        self._upstream = cluster["server"].rstrip("/")
        self._ssl = ssl.create_default_context(cafile=cluster["certificate-authority"])
        self._token = config["users"][0]["user"]["token"]
        self.delay: dict[Kind, float] = {}
        self.fail_every: dict[Kind, int] = {}
        self.conflict_every = 0
        self.conflict_node: str | None = None
        # Pods that the proxy itself bound before forwarding (conflict_every):
        # "someone else" bound them, so the scheduler owes them no event.
        self.bound_first: set[str] = set()
        self.fail_lease_writes = False
        self.bind_arrivals: list[tuple[float, str]] = []
        self.seen: Counter[Kind] = Counter()
        self.injected: Counter[str] = Counter()
        self.binds: list[BindRecord] = []
        self.binds_in_flight: set[str] = set()
        self.max_binds_in_flight = 0  # the most bind requests held at once
        # (event name, answer status) of every event create, injected or not
        self.event_writes: list[tuple[str, int]] = []
        self._reads_blocked = False
        self._watches: set[aiohttp.ClientResponse] = set()
        self._session: aiohttp.ClientSession | None = None
        self._runner: web.AppRunner | None = None
        self.port = 0

    # ----------------------------------------------------------- lifecycle
    async def start(self) -> None:
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=self._ssl, limit=0),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=5),
            auto_decompress=False,
        )
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    async def stop(self) -> None:
        for response in list(self._watches):
            response.close()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def __aenter__(self) -> FaultProxy:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    def write_kubeconfig(self, path: Path) -> Path:
        """A kubeconfig that reaches the API server through this proxy."""
        server = f"http://127.0.0.1:{self.port}"
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "proxy", "cluster": {"server": server}}],
            "users": [{"name": "anonymous", "user": {}}],
            "contexts": [{"name": "proxy", "context": {"cluster": "proxy", "user": "anonymous"}}],
            "current-context": "proxy",
        }
        path.write_text(yaml.safe_dump(config))
        return path

    # -------------------------------------------------------------- faults
    def block_reads(self) -> None:
        """End every watch now; lists and watches get 503 until ``unblock_reads``."""
        self._reads_blocked = True
        for response in list(self._watches):
            response.close()

    def unblock_reads(self) -> None:
        self._reads_blocked = False

    def double_bound(self) -> dict[str, int]:
        """Pods that more than one bind request bound successfully."""
        counts = Counter(record.pod for record in self.binds if record.status == 201)
        return {pod: count for pod, count in counts.items() if count > 1}

    # ------------------------------------------------------------ handling
    async def _handle(self, request: web.Request) -> web.StreamResponse:
        kind = classify(request.method, request.path, dict(request.query))
        self.seen[kind] += 1
        if kind in (Kind.WATCH, Kind.LIST) and self._reads_blocked:
            self.injected["reads blocked"] += 1
            return _status(503, "ServiceUnavailable", "reads blocked by the fault proxy")
        body = await request.read()
        if self.fail_lease_writes and request.method != "GET" and _LEASE.match(request.path):
            self.injected["lease write 500"] += 1
            return _status(500, "InternalError", "lease write failed by the fault proxy")
        if kind is Kind.BIND:
            return await self._bind(request, body)
        if self.delay.get(kind):
            await asyncio.sleep(self.delay[kind])
        every = self.fail_every.get(kind, 0)
        event = _event_name(body) if kind is Kind.EVENT and request.method == "POST" else ""
        if every and self.seen[kind] % every == 0:
            self.injected[f"{kind} 500"] += 1
            if event:
                self.event_writes.append((event, 500))
            return _status(500, "InternalError", f"{kind} failed by the fault proxy")
        if kind is Kind.WATCH:
            return await self._stream(request)
        status, headers, data = await self._forward(request.method, request.path_qs, body, request)
        if event:
            self.event_writes.append((event, status))
        return web.Response(status=status, body=data, headers=headers)

    async def _bind(self, request: web.Request, body: bytes) -> web.StreamResponse:
        match = _BINDING.match(request.path)
        assert match is not None
        pod = f"{match.group(1)}/{match.group(2)}"
        node = _bound_node(body)
        self.bind_arrivals.append((time.time(), pod))
        self.binds_in_flight.add(pod)
        self.max_binds_in_flight = max(self.max_binds_in_flight, len(self.binds_in_flight))
        arrived = self.seen[Kind.BIND]
        try:
            if self.delay.get(Kind.BIND):
                await asyncio.sleep(self.delay[Kind.BIND])
                if request.transport is None or request.transport.is_closing():
                    # The client gave up during the hold (as a fenced leader
                    # cancelling its binds does): the request never arrives.
                    self.injected["bind abandoned"] += 1
                    self.binds.append(BindRecord(pod, node, 499, True, arrived, time.monotonic()))
                    return _status(499, "ClientClosed", "the client closed the connection")
            number = self.seen[Kind.BIND]
            every = self.fail_every.get(Kind.BIND, 0)
            if every and number % every == 0:
                self.injected["bind 500"] += 1
                self.binds.append(BindRecord(pod, node, 500, True, arrived, time.monotonic()))
                return _status(500, "InternalError", "bind failed by the fault proxy")
            if self.conflict_every and number % self.conflict_every == 0:
                elsewhere = (number // self.conflict_every) % 2 == 0 and self.conflict_node
                await self._bind_first(request.path, body, elsewhere or node)
            status, headers, data = await self._forward("POST", request.path_qs, body, request)
            self.binds.append(BindRecord(pod, node, status, False, arrived, time.monotonic()))
            return web.Response(status=status, body=data, headers=headers)
        finally:
            self.binds_in_flight.discard(pod)

    async def _bind_first(self, path: str, body: bytes, node: str) -> None:
        match = _BINDING.match(path)
        assert match is not None
        pod = f"{match.group(1)}/{match.group(2)}"
        binding = binding_body(match.group(1), match.group(2), "", node)
        status, _, _ = await self._forward("POST", path, orjson.dumps(binding), None)
        self.binds.append(BindRecord(pod, node, status))
        if status == 201:
            self.injected["bind conflict"] += 1
            self.bound_first.add(pod)

    async def _forward(
        self, method: str, path_qs: str, body: bytes, request: web.Request | None
    ) -> tuple[int, dict[str, str], bytes]:
        assert self._session is not None
        headers = self._headers(request)
        try:
            async with self._session.request(
                method, self._upstream + path_qs, data=body or None, headers=headers
            ) as response:
                data = await response.read()
                return response.status, self._response_headers(response), data
        except (aiohttp.ClientError, OSError) as error:
            data = _status_bytes(503, "ServiceUnavailable", f"fault proxy: upstream: {error}")
            return 503, {"Content-Type": "application/json"}, data

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        try:
            upstream = await self._session.request(
                "GET", self._upstream + request.path_qs, headers=self._headers(request)
            )
        except (aiohttp.ClientError, OSError) as error:
            return _status(503, "ServiceUnavailable", f"fault proxy: upstream: {error}")
        self._watches.add(upstream)
        try:
            response = web.StreamResponse(
                status=upstream.status, headers=self._response_headers(upstream)
            )
            await response.prepare(request)
            with contextlib.suppress(aiohttp.ClientError, OSError, ConnectionResetError):
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
            with contextlib.suppress(ConnectionResetError, OSError):
                await response.write_eof()
            return response
        finally:
            self._watches.discard(upstream)
            upstream.close()

    def _headers(self, request: web.Request | None) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self._token}"}
        if request is None:
            headers["Content-Type"] = "application/json"
            return headers
        for name, value in request.headers.items():
            if name.lower() in _HOP_HEADERS:
                headers[name] = value
        return headers

    @staticmethod
    def _response_headers(response: aiohttp.ClientResponse) -> dict[str, str]:
        return {
            name: value
            for name, value in response.headers.items()
            if name.lower() in ("content-type", "content-encoding")
        }
