"""``KubeClient``: the one async client of the process, raw JSON over aiohttp;
the two writes every bound pod makes (binding and event, protobuf, answer not
needed) go through the leaner ``WriteLane`` (``h1.py``) when the server is
reached without a proxy.

Why not kubernetes_asyncio's generated APIs: model (de)serialisation is the
dominant cost on hot paths, and the generated ``create_namespaced_pod_binding``
raises after a successful bind (it parses the ``Status`` reply as a
``V1Binding``). Here every response is decoded with orjson into plain dicts and
success is decided by the real HTTP status alone. kubernetes_asyncio is used
only to load the kubeconfig or in-cluster configuration (``connection.py``).

Contract:
- Failures raise ``ApiError`` (an answer outside 2xx) or ``TransportError``
  (no answer); nothing is retried inside the client: callers decide.
- Writes and ``request()`` pass the priority rate limiter (``ratelimit.py``);
  lists and watches do not (see there for why).
- Every non-watch request has a total timeout (``request_timeout``). A watch
  has a connect timeout and a silence timeout: no complete line for
  ``timeout_seconds + watch_margin`` raises ``WatchTimeout``, so a hung
  connection (kubernetes_asyncio #360) cannot stall an informer forever.
- A watch is an async generator holding one HTTP response; consumers close it
  (``contextlib.aclosing``) to release the connection promptly.
- ``close()`` leaves no socket open. A response released before its end (an
  abandoned watch, a cancelled request) closes its connection, and over TLS
  that close is graceful: close_notify is sent and the socket kept until the
  peer answers (up to asyncio's 30 s shutdown timeout). aiohttp's connector
  forgets such a connection at release, so ``ClientSession.close()`` neither
  waits for it nor aborts it, and it would outlive the client (an "unclosed
  transport" ResourceWarning once the loop is gone). The client remembers
  every transport it used (weakly) and ``close()`` aborts those not yet
  closed and waits until each has lost its connection.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import AsyncGenerator, Mapping
from typing import Any, Protocol
from urllib.parse import urlsplit

import aiohttp
from aiohttp.client_proto import ResponseHandler
from aiohttp.client_reqrep import ClientRequest
from aiohttp.tracing import Trace

from scheduler.framework.clock import Clock, RealClock
from scheduler.kube.connection import Connection, load_connection
from scheduler.kube.errors import (
    HTTP_UNSUPPORTED_MEDIA_TYPE,
    ApiError,
    TransportError,
    WatchTimeout,
)
from scheduler.kube.h1 import WriteLane
from scheduler.kube.protobuf import PROTOBUF, Unencodable, encode_binding, encode_event
from scheduler.kube.ratelimit import Priority, RateLimiter
from scheduler.kube.resources import EVENTS, PODS, ResourceType
from scheduler.kube.wire import (
    JSON,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    LineSplitter,
    binding_body,
    decode_json,
    encode_json,
    error_from_response,
    list_query,
    parse_watch_line,
    watch_query,
)

log = logging.getLogger(__name__)

# Answers whose body is not needed: protobuf is cheaper for the server to encode.
ACCEPT_PROTOBUF = f"{PROTOBUF}, {JSON}"
DEFAULT_REQUEST_TIMEOUT = 30.0
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_WATCH_MARGIN = 30.0
# Watch events with large objects exceed aiohttp's 64 KiB default buffer.
_READ_BUFSIZE = 2**21
# Room for every watch (one per informer, ~25 with the default profile) plus
# the binding cycles (max_binding, 64), the event writer (32) and status
# patches at once: with HTTP/1.1 each request in flight holds a connection,
# and a pool smaller than that makes requests queue for a free one.
DEFAULT_MAX_CONNECTIONS = 256
# Keep idle connections as long as client-go does (IdleConnTimeout 90 s), so
# a pause between bursts does not cost a new TLS handshake per connection.
IDLE_CONNECTION_TIMEOUT = 90.0
# The write lane drops a connection idle this long rather than send a POST on
# it (a POST is not replayed, and the server may have closed it meanwhile).
LANE_IDLE_TIMEOUT = 30.0
_TRANSPORT_ERRORS = (aiohttp.ClientError, TimeoutError, OSError)


def _write_lane(
    connection: Connection, max_connections: int, connect_timeout: float, clock: Clock
) -> WriteLane | None:
    """The lane for a server reached directly over http, or https with a TLS
    context; None (aiohttp carries every request) behind a proxy."""
    url = urlsplit(connection.host)
    if connection.proxy or url.hostname is None:
        return None
    if url.scheme == "https" and connection.ssl_context is not None:
        port = url.port or 443
    elif url.scheme == "http":
        port = url.port or 80
    else:
        return None
    return WriteLane(
        host=url.hostname,
        port=port,
        authority=url.netloc,
        ssl_context=connection.ssl_context if url.scheme == "https" else None,
        server_hostname=connection.tls_server_name,
        max_connections=max_connections,
        idle_timeout=LANE_IDLE_TIMEOUT,
        connect_timeout=connect_timeout,
        clock=clock,
    )


class _ConnectionCounter:
    """Counts the connections a connector opens."""

    def __init__(self) -> None:
        self.count = 0


class _CountingConnector(aiohttp.TCPConnector):
    """A TCPConnector that counts the connections it opens. (Not a session
    trace hook: with any trace config, aiohttp runs its tracing on every
    request and response chunk, a measurable cost per request.)"""

    def __init__(self, counter: _ConnectionCounter, **options: Any) -> None:
        super().__init__(**options)
        self._counter = counter

    async def _create_connection(
        self,
        req: ClientRequest,
        traces: list[Trace],
        timeout: aiohttp.ClientTimeout,  # noqa: ASYNC109 (aiohttp's own signature)
    ) -> ResponseHandler:
        handler = await super()._create_connection(req, traces, timeout)
        self._counter.count += 1
        return handler


class RequestMetrics(Protocol):
    """Where the client reports each request (client-go's ``rest_client_*``)."""

    def rest_request(self, method: str, host: str, code: str, seconds: float) -> None: ...

    def rate_limiter_wait(self, verb: str, host: str, seconds: float) -> None: ...


class _NoMetrics:
    def rest_request(self, method: str, host: str, code: str, seconds: float) -> None:
        pass

    def rate_limiter_wait(self, verb: str, host: str, seconds: float) -> None:
        pass


# ``code`` of a request that got no HTTP answer, as client-go.
NO_ANSWER = "<error>"


class KubeClient:
    """Create with ``await KubeClient.connect(...)``; ``await close()`` at shutdown."""

    def __init__(
        self,
        connection: Connection,
        session: aiohttp.ClientSession,
        limiter: RateLimiter,
        *,
        user_agent: str,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        watch_margin: float = DEFAULT_WATCH_MARGIN,
        protobuf_writes: bool = True,
        lane: WriteLane | None = None,
    ) -> None:
        self._connection = connection
        self._protobuf_writes = protobuf_writes
        # The per-pod writes (binding, event) when the server is reached
        # directly (no proxy): see scheduler/kube/h1.py for why.
        self._lane = lane
        self._request_timeout = request_timeout
        self._session = session
        self._limiter = limiter
        self._user_agent = user_agent
        self._timeout = aiohttp.ClientTimeout(total=request_timeout, sock_connect=connect_timeout)
        self._connect_timeout = connect_timeout
        self._watch_timeout = aiohttp.ClientTimeout(
            total=None, connect=connect_timeout, sock_connect=connect_timeout
        )
        self._watch_open_timeout = request_timeout
        self._watch_margin = watch_margin
        self._opened = _ConnectionCounter()
        self._metrics: RequestMetrics = _NoMetrics()
        self._host = urlsplit(connection.host).netloc
        # Every transport a response came on; dead ones drop out (see close()).
        self._transports: weakref.WeakSet[asyncio.Transport] = weakref.WeakSet()

    @classmethod
    async def connect(
        cls,
        *,
        kubeconfig: str | None,
        qps: float,
        burst: int,
        user_agent: str,
        context: str | None = None,
        master: str | None = None,
        clock: Clock | None = None,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        watch_margin: float = DEFAULT_WATCH_MARGIN,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        protobuf_writes: bool = True,
    ) -> KubeClient:
        """From the kubeconfig at ``kubeconfig``, else the in-cluster service account;
        ``master`` overrides the server address (``--master``).
        ``qps``/``burst`` are the clientConnection settings (``qps <= 0``: unlimited);
        ``protobuf_writes`` sends bindings and events as protobuf (contentType)."""
        return cls.open(
            await load_connection(kubeconfig, context, master),
            qps=qps,
            burst=burst,
            user_agent=user_agent,
            clock=clock,
            request_timeout=request_timeout,
            connect_timeout=connect_timeout,
            watch_margin=watch_margin,
            max_connections=max_connections,
            protobuf_writes=protobuf_writes,
        )

    @classmethod
    def open(
        cls,
        connection: Connection,
        *,
        qps: float,
        burst: int,
        user_agent: str,
        clock: Clock | None = None,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        watch_margin: float = DEFAULT_WATCH_MARGIN,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        protobuf_writes: bool = True,
    ) -> KubeClient:
        """For an already resolved ``Connection``; must run inside the event loop."""
        opened = _ConnectionCounter()
        connector = _CountingConnector(
            opened,
            limit=max_connections,
            keepalive_timeout=IDLE_CONNECTION_TIMEOUT,
            ssl=connection.ssl_context or False,
        )
        session = aiohttp.ClientSession(
            connector=connector,
            read_bufsize=_READ_BUFSIZE,
            raise_for_status=False,
        )
        clock = clock or RealClock()
        limiter = RateLimiter(qps, burst, clock)
        client = cls(
            connection,
            session,
            limiter,
            user_agent=user_agent,
            request_timeout=request_timeout,
            connect_timeout=connect_timeout,
            watch_margin=watch_margin,
            protobuf_writes=protobuf_writes,
            lane=_write_lane(connection, max_connections, connect_timeout, clock),
        )
        client._opened = opened
        return client

    def sibling(
        self,
        *,
        qps: float,
        burst: int,
        request_timeout: float,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> KubeClient:
        """A client to the same API server with the same credentials but its
        own connection pool and rate limiter (the ops port's reviews: their
        traffic must never wait in, or fill, this client's limiter or pool).
        JSON writes; must run inside the event loop; close it separately."""
        return KubeClient.open(
            self._connection,
            qps=qps,
            burst=burst,
            user_agent=self._user_agent,
            clock=self._limiter.clock,
            request_timeout=request_timeout,
            connect_timeout=self._connect_timeout,
            max_connections=max_connections,
            protobuf_writes=False,
        )

    @property
    def limiter(self) -> RateLimiter:
        return self._limiter

    @property
    def connections_opened(self) -> int:
        """New connections (TCP, and TLS where used) opened so far; it stays
        flat in steady state when the pool keeps connections alive."""
        return self._opened.count + (self._lane.opened if self._lane is not None else 0)

    def report_to(self, metrics: RequestMetrics) -> None:
        """Report every request from now on (the root wires the registry)."""
        self._metrics = metrics

    async def close(self) -> None:
        """Close the session, then abort the connections it no longer knows
        that are still closing (TLS shutdown awaiting the peer) and wait until
        every one is gone: no socket survives this call."""
        self._limiter.close()
        if self._lane is not None:
            await self._lane.close()
        await self._session.close()
        lost: list[asyncio.Future[None]] = []
        for transport in list(self._transports):
            protocol = transport.get_protocol()
            closed = getattr(protocol, "closed", None)  # aiohttp's ResponseHandler
            if isinstance(closed, asyncio.Future) and not closed.done():
                transport.abort()
                lost.append(closed)
        self._transports.clear()
        if lost:
            await asyncio.gather(*lost, return_exceptions=True)

    def _remember(self, response: aiohttp.ClientResponse) -> None:
        connection = response.connection
        transport = connection.transport if connection is not None else None
        if transport is not None:
            self._transports.add(transport)

    # ------------------------------------------------------------------ reads
    async def list(
        self,
        resource: ResourceType,
        *,
        resource_version: str | None = None,
        limit: int = 500,
        continue_: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        namespace: str | None = None,
    ) -> dict[str, Any]:
        """One page of a list, as the raw ``<Kind>List`` JSON."""
        query = list_query(
            resource_version=resource_version,
            limit=limit,
            continue_=continue_,
            label_selector=label_selector,
            field_selector=field_selector,
        )
        result = await self._call("GET", resource.collection_path(namespace), query=query)
        if not isinstance(result, dict):
            raise TransportError(f"list {resource.group_resource}: not a list object")
        return result

    async def watch(
        self,
        resource: ResourceType,
        *,
        resource_version: str,
        timeout_seconds: int,
        allow_bookmarks: bool = True,
        label_selector: str | None = None,
        field_selector: str | None = None,
        namespace: str | None = None,
    ) -> AsyncGenerator[dict[str, Any], None]:
        """Raw watch events ``{"type", "object"}`` until the server ends the
        stream (after ``timeout_seconds``). ``ERROR`` events are yielded as they
        come; an error answer to the request itself raises ``ApiError``."""
        query = watch_query(
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            allow_bookmarks=allow_bookmarks,
            label_selector=label_selector,
            field_selector=field_selector,
        )
        path = resource.collection_path(namespace)
        silence = timeout_seconds + self._watch_margin
        loop = asyncio.get_running_loop()
        started = time.perf_counter()
        try:
            async with asyncio.timeout(self._watch_open_timeout):
                response = await self._session.request(
                    "GET",
                    self._url(path),
                    params=query,
                    headers=await self._headers(None),
                    timeout=self._watch_timeout,
                    **self._request_extras(),
                )
        except _TRANSPORT_ERRORS as err:
            self._metrics.rest_request("GET", self._host, NO_ANSWER, time.perf_counter() - started)
            raise TransportError(f"watch {path}: {err!r}") from err
        self._remember(response)
        # A watch counts when its answer starts (its duration: until the headers).
        self._metrics.rest_request(
            "GET", self._host, str(response.status), time.perf_counter() - started
        )
        async with response:
            if response.status != 200:
                body = await self._read_body(response, path)
                raise error_from_response(response.status, body)
            splitter = LineSplitter()
            last_line = loop.time()
            while True:
                try:
                    async with asyncio.timeout_at(last_line + silence) as deadline:
                        chunk = await response.content.readany()
                except TimeoutError as err:
                    if deadline.expired():
                        raise WatchTimeout(f"watch {path}: silent for {silence:.0f}s") from err
                    raise TransportError(f"watch {path}: {err!r}") from err
                except _TRANSPORT_ERRORS as err:
                    raise TransportError(f"watch {path}: {err!r}") from err
                if not chunk:
                    return
                lines = splitter.feed(chunk)
                if lines:
                    last_line = loop.time()
                for line in lines:
                    yield parse_watch_line(line)

    # ----------------------------------------------------------------- writes
    async def bind(self, pod_namespace: str, pod_name: str, pod_uid: str, node_name: str) -> None:
        """POST pods/binding. Returns on any 2xx; raises ``ApiError`` otherwise
        (409 if the pod is already bound or its uid changed)."""
        path = PODS.object_path(pod_name, pod_namespace, "binding")
        if self._protobuf_writes:
            try:
                body = encode_binding(pod_namespace, pod_name, pod_uid, node_name)
            except Unencodable as err:
                log.debug("binding sent as JSON: protobuf cannot carry it: %s", err)
            else:
                if await self._protobuf_call(path, body, Priority.CRITICAL):
                    return
        await self._call(
            "POST",
            path,
            body=binding_body(pod_namespace, pod_name, pod_uid, node_name),
            priority=Priority.CRITICAL,
        )

    async def patch_pod_status(
        self, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Strategic merge patch on pods/status; returns the updated pod."""
        result = await self._call(
            "PATCH",
            PODS.object_path(name, namespace, "status"),
            body=patch,
            content_type=STRATEGIC_MERGE_PATCH,
            priority=Priority.NORMAL,
        )
        return result if isinstance(result, dict) else {}

    async def create_event(self, namespace: str, event: Mapping[str, Any]) -> None:
        """POST an events.k8s.io/v1 Event."""
        path = EVENTS.collection_path(namespace)
        if self._protobuf_writes:
            try:
                body = encode_event(event)
            except Unencodable as err:
                log.debug("event sent as JSON: protobuf cannot carry field %s", err)
            else:
                if await self._protobuf_call(path, body, Priority.LOW):
                    return
        await self._call("POST", path, body=event, priority=Priority.LOW)

    async def patch_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        """Merge-patch an events.k8s.io/v1 Event (series count and lastObservedTime)."""
        await self._call(
            "PATCH",
            EVENTS.object_path(name, namespace),
            body=patch,
            content_type=MERGE_PATCH,
            priority=Priority.LOW,
        )

    async def create_core_event(self, namespace: str, event: Mapping[str, Any]) -> None:
        """POST a core/v1 Event (the fallback when events.k8s.io is refused)."""
        await self._call(
            "POST", f"/api/v1/namespaces/{namespace}/events", body=event, priority=Priority.LOW
        )

    async def patch_core_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        """Merge-patch a core/v1 Event (count and lastTimestamp)."""
        await self._call(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/events/{name}",
            body=patch,
            content_type=MERGE_PATCH,
            priority=Priority.LOW,
        )

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str | None = None,
        *,
        query: Mapping[str, str] | None = None,
        priority: Priority = Priority.CRITICAL,
    ) -> Any:
        """Any API call by path (``/apis/resource.k8s.io/v1/...``), returning the
        decoded JSON body (None if empty). PATCH defaults to a JSON merge patch.
        The default priority is CRITICAL because plugins call this from PreBind,
        which a binding cycle waits on; pass a lower one for background work."""
        method = method.upper()
        if content_type is None and body is not None:
            content_type = MERGE_PATCH if method == "PATCH" else JSON
        return await self._call(
            method, path, query=query, body=body, content_type=content_type, priority=priority
        )

    # --------------------------------------------------------------- plumbing
    async def _protobuf_call(self, path: str, body: bytes, priority: Priority) -> bool:
        """POST a protobuf body whose success answer is not needed. False when
        the server refuses the media type (415): protobuf writes are then off
        for the client's life and the caller sends JSON."""
        try:
            if self._lane is None:
                await self._call(
                    "POST", path, body=body, content_type=PROTOBUF, priority=priority, reply=False
                )
            else:
                await self._lane_post(self._lane, path, body, PROTOBUF, priority)
        except ApiError as err:
            if err.status != HTTP_UNSUPPORTED_MEDIA_TYPE:
                raise
            log.warning("protobuf refused (%s); writing JSON from now on", err)
            self._protobuf_writes = False
            return False
        return True

    async def _admit(self, method: str, priority: Priority) -> None:
        """Wait for the rate limiter, and report how long it took."""
        waited = time.perf_counter()
        await self._limiter.acquire(priority)
        self._metrics.rate_limiter_wait(method, self._host, time.perf_counter() - waited)

    async def _lane_post(
        self, lane: WriteLane, path: str, body: bytes, content_type: str, priority: Priority
    ) -> None:
        """``_call``'s POST with ``reply=False``, through the write lane."""
        await self._admit("POST", priority)
        headers = await self._headers(content_type, ACCEPT_PROTOBUF)
        started = time.perf_counter()
        try:
            answer = await lane.post(path, headers, body, self._request_timeout)
        except TransportError as err:
            self._metrics.rest_request("POST", self._host, NO_ANSWER, time.perf_counter() - started)
            raise TransportError(f"POST {path}: {err}") from err
        self._metrics.rest_request(
            "POST", self._host, str(answer.status), time.perf_counter() - started
        )
        if not 200 <= answer.status < 300:
            raise error_from_response(answer.status, answer.body)

    async def _call(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str | None = None,
        priority: Priority | None = None,
        reply: bool = True,
    ) -> Any:
        """One request. With ``reply=False`` a success answer's body is not
        decoded (None is returned) and protobuf is accepted for it, which the
        server encodes more cheaply than JSON; an error answer is read either way."""
        if priority is not None:
            await self._admit(method, priority)
        data = encode_json(body) if body is not None else None
        if data is not None and content_type is None:
            content_type = JSON
        headers = await self._headers(content_type, JSON if reply else ACCEPT_PROTOBUF)
        started = time.perf_counter()
        try:
            async with self._session.request(
                method,
                self._url(path),
                params=query,
                data=data,
                headers=headers,
                timeout=self._timeout,
                **self._request_extras(),
            ) as response:
                self._remember(response)
                status = response.status
                payload = await response.read()
        except _TRANSPORT_ERRORS as err:
            self._metrics.rest_request(method, self._host, NO_ANSWER, time.perf_counter() - started)
            raise TransportError(f"{method} {path}: {err!r}") from err
        self._metrics.rest_request(method, self._host, str(status), time.perf_counter() - started)
        if not 200 <= status < 300:
            raise error_from_response(status, payload)
        return decode_json(payload) if reply else None

    async def _read_body(self, response: aiohttp.ClientResponse, path: str) -> bytes:
        try:
            async with asyncio.timeout(self._watch_open_timeout):
                return await response.read()
        except _TRANSPORT_ERRORS as err:
            raise TransportError(f"watch {path}: {err!r}") from err

    def _url(self, path: str) -> str:
        return f"{self._connection.host}{path}"

    async def _headers(self, content_type: str | None, accept: str = JSON) -> dict[str, str]:
        headers = {"Accept": accept, "User-Agent": self._user_agent}
        authorization = await self._connection.authorization()
        if authorization:
            headers["Authorization"] = authorization
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    def _request_extras(self) -> dict[str, Any]:
        extras: dict[str, Any] = {}
        if self._connection.tls_server_name:
            extras["server_hostname"] = self._connection.tls_server_name
        if self._connection.proxy:
            extras["proxy"] = self._connection.proxy
        return extras
