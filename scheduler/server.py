"""The operations HTTP server: /metrics, /healthz, /livez, /readyz, /configz, /debug/pods.

A thin aiohttp adapter: the health semantics live in ``scheduler.health``, the
metrics in the registry passed in, the attempt history behind
``DiagnosticsSource``. The composition root owns the server's lifetime
(``start``/``stop``); the server starts no task of its own beyond aiohttp's
listener.

Served over HTTPS when given an ``ssl.SSLContext`` (``scheduler.tls``) and,
when given a ``RequestGuard`` (``scheduler.delegation.DelegatedAuth``), every
request is authenticated and authorized before its handler runs: 401 or 403
with a JSON ``Status`` body otherwise, as kube-scheduler's secure serving.
Without either (unit tests) the endpoints are plain and open. The listening
socket has a header-read timeout, a TLS handshake timeout and a connection
cap (``scheduler.connlimits.Limits``), which aiohttp itself lacks; a request
line of another version than HTTP/1.0 or 1.1 is answered 505 and closed, as
Go's net/http does (``_http1_only``; aiohttp would serve ``HTTP/2.0``).

Endpoints (upstream ``cmd/kube-scheduler/app/server.go``):
- ``/metrics``: Prometheus text exposition of the registry, without the
  families named by ``--disabled-metrics``;
- ``/metrics/resources``: ``kube_pod_resource_request``/``_limit`` per pod
  (``scheduler.podresources``), collected at scrape time;
- ``/healthz``, ``/livez``, ``/readyz`` with ``?verbose``, ``?exclude=name`` and
  per-check paths ``/<endpoint>/<name>``;
- ``/configz``: ``{"componentconfig": <effective config>}`` (404 when none given),
  plus ``"warnings"`` (dangerous choices, ``scheduler.config.advice``) if any;
- ``/debug/pods/{namespace}/{name}``: the pod's last scheduling attempts as JSON
  (404 with a JSON error when none are kept);
- ``/debug/plugins/<path>``: GET routes plugins registered (``PluginHttp.debug``).
- ``/debug/cache``: the cache comparer's report as JSON (a fresh list from the
  API server compared with the cache; 503 with a JSON error if the list fails).

Plugin listeners (``PluginHttp.listen``) are served on their own ports (plain
HTTP, not behind the guard: the plugin owns that protocol), every
method and path, with the guarantees stated in ``scheduler.framework.services``:
503 until ``gate`` lets them through (synced, started, leading), at most
``max_body_bytes`` of the body read, a handler exception answered 500.

Process listeners (``PluginHttp.listen_process``) are started after the
thread listeners (``scheduler.listenerprocess.ProcessListener``: the port is
bound here, the child spawned and waited for) and stopped first; their gate
is pushed to them every ``GATE_SECONDS`` when it changes, with its expiry
(``gate_expiry``: while leading, the end of the leadership the last renewal
bought), so a child whose daemon stalls stops serving on its own.

Threads: each plugin listener is served by a ``scheduler.listener.ListenerThread``
(its own thread, ``selectors`` loop and minimal HTTP/1.1 protocol), started by
``start`` and stopped (connections closed, thread joined) by ``stop``;
nothing else here runs off the daemon's loop. On that thread only ``gate``
(plain reads of flags) and the plugin's handler are called.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import ssl
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, Protocol

import orjson
from aiohttp import HttpVersion10, HttpVersion11, web
from aiohttp.typedefs import Handler
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric

from scheduler.connlimits import LimitedSite, Limits
from scheduler.delegation import Decision
from scheduler.framework.services import DebugHandler, HttpHandler, HttpRequest
from scheduler.health import Endpoint, HealthChecks, HealthResponse, render, render_one
from scheduler.listener import ListenerThread
from scheduler.listenerprocess import ProcessListener
from scheduler.pluginservices import Listener

log = logging.getLogger(__name__)

CONFIGZ_KEY = "componentconfig"
GATE_SECONDS = 0.02  # how soon a process listener follows the gate
# How long stop() lets ops requests in flight finish (aiohttp's default is
# 60 s): the exit, leadership loss included, must not wait on a client.
SHUTDOWN_GRACE_SECONDS = 2.0
_TEXT = "text/plain; charset=utf-8"


# Why a plugin listener refuses now (None: serve). Given the listener's
# ``leader_only``; the composition root knows sync, start and leadership.
ListenerGate = Callable[[bool], str | None]
# Until when (``time.monotonic`` seconds) a process listener may serve on its
# last gate without hearing again, given its ``leader_only`` (None: no limit).
GateExpiry = Callable[[bool], float | None]


class DiagnosticsSource(Protocol):
    def attempts(self, namespace: str, name: str) -> list[dict[str, Any]] | None: ...


class RequestGuard(Protocol):
    async def check(self, authorization: str | None, path: str, method: str) -> Decision: ...


def _refusal(decision: Decision) -> web.Response:
    reason = "Unauthorized" if decision.status == 401 else "Forbidden"
    return _json(
        decision.status,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "message": decision.reason or reason,
            "reason": reason,
            "code": decision.status,
        },
    )


@web.middleware
async def _http1_only(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A request line whose version is not HTTP/1.0 or 1.1 is answered 505 and
    the connection closed, as Go's net/http does (``http1ServerSupportsRequest``);
    aiohttp's parser lets ``HTTP/2.0`` through and would serve it with
    ``HTTP/2.0`` in the status line, which no HTTP/1 client reads. aiohttp
    writes the request's version in the status line, so the refusal sets it to
    1.1 first: the one touch of aiohttp's private request state here (its
    ``_version`` and the cached ``version``), pinned by
    ``test_request_versions_other_than_http1_are_refused_505_as_http11``."""
    if request.version in (HttpVersion10, HttpVersion11):
        return await handler(request)
    request._version = HttpVersion11
    request._cache.pop("version", None)  # ``version`` is cached (reify) once read
    response = _plain(505, "unsupported protocol version")
    response.force_close()
    return response


def _json(status: int, payload: object) -> web.Response:
    body = orjson.dumps(payload, default=str, option=orjson.OPT_NON_STR_KEYS)
    return web.Response(status=status, body=body, content_type="application/json")


def _text(response: HealthResponse) -> web.Response:
    return web.Response(
        status=response.status,
        body=response.body.encode(),
        headers={"Content-Type": _TEXT, "X-Content-Type-Options": "nosniff"},
    )


def _plain(status: int, text: str) -> web.Response:
    return web.Response(status=status, body=text.encode(), content_type="text/plain")


async def _call(
    name: str, handler: HttpHandler | DebugHandler, request: web.Request, body: bytes
) -> web.Response:
    plugin_request = HttpRequest(
        method=request.method, path=request.path, body=body, remote=request.remote or ""
    )
    try:
        answer = handler(plugin_request)
        response = await answer if inspect.isawaitable(answer) else answer
    except Exception:
        log.exception("plugin endpoint %s failed", name)
        return _plain(500, "internal error")
    if response.after is not None:  # a debug route: already on the daemon's loop
        response.after()
    return web.Response(
        status=response.status, body=response.body, content_type=response.content_type
    )


class OpsServer:
    def __init__(
        self,
        host: str,
        port: int,
        registry: CollectorRegistry,
        health: HealthChecks,
        diagnostics: DiagnosticsSource,
        *,
        config_dump: Callable[[], dict[str, Any]] | None = None,
        config_warnings: Sequence[str] = (),
        disabled_metrics: frozenset[str] = frozenset(),
        resource_metrics: CollectorRegistry | None = None,
        listeners: Sequence[Listener] = (),
        process_listeners: Sequence[ProcessListener] = (),
        debug_routes: dict[str, DebugHandler] | None = None,
        gate: ListenerGate | None = None,
        gate_expiry: GateExpiry | None = None,
        cache_report: Callable[[], Awaitable[dict[str, Any]]] | None = None,
        ssl_context: ssl.SSLContext | None = None,
        guard: RequestGuard | None = None,
        limits: Limits | None = None,
    ) -> None:
        self._limits = limits or Limits()
        self._site: LimitedSite | None = None
        self._listeners = tuple(listeners)
        self._debug_routes = dict(debug_routes or {})
        self._gate = gate or (lambda _leader_only: None)
        self._gate_expiry = gate_expiry or (lambda _leader_only: None)
        self._listener_threads: list[ListenerThread] = []
        self._process_listeners = tuple(process_listeners)
        self._started_processes: list[ProcessListener] = []
        self._gate_timer: asyncio.TimerHandle | None = None
        self._host = host
        self._port = port
        self._resource_metrics = resource_metrics
        self._registry: CollectorRegistry | _WithoutFamilies = (
            _WithoutFamilies(registry, disabled_metrics) if disabled_metrics else registry
        )
        self._health = health
        self._diagnostics = diagnostics
        self._config_dump = config_dump
        self._config_warnings = list(config_warnings)
        self._cache_report = cache_report
        self._ssl_context = ssl_context
        self._guard = guard
        self._runner: web.AppRunner | None = None

    @property
    def scheme(self) -> str:
        return "https" if self._ssl_context is not None else "http"

    def app(self) -> web.Application:
        """The routes, unstarted (``start`` serves them)."""
        middlewares = [_http1_only]
        if self._guard is not None:
            middlewares.append(self._guarded)
        app = web.Application(middlewares=middlewares)
        app.router.add_get("/metrics", self._metrics)
        if self._resource_metrics is not None:
            app.router.add_get("/metrics/resources", self._metrics_resources)
        for endpoint in Endpoint:
            app.router.add_get(f"/{endpoint}", self._health_root(endpoint))
            app.router.add_get(f"/{endpoint}/{{check}}", self._health_check(endpoint))
        app.router.add_get("/configz", self._configz)
        app.router.add_get("/debug/pods/{namespace}/{name}", self._debug_pod)
        app.router.add_get("/debug/cache", self._debug_cache)
        for path, handler in self._debug_routes.items():
            app.router.add_get(f"/debug/plugins/{path}", self._plugin_debug(handler))
        return app

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("OpsServer already started")
        runner = web.AppRunner(
            self.app(),
            access_log=None,
            handle_signals=False,
            shutdown_timeout=SHUTDOWN_GRACE_SECONDS,
        )
        await runner.setup()
        try:
            site = LimitedSite(
                runner, self._host, self._port, ssl_context=self._ssl_context, limits=self._limits
            )
            await site.start()
            self._site = site
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        try:
            for listener in self._listeners:
                await self._start_listener(listener)
            for process in self._process_listeners:
                self._update_gate(process)
                self._started_processes.append(process)
                await process.start(self._host)
        except BaseException:
            await self.stop()
            raise
        if self._process_listeners:
            self._push_gates()

    def _push_gates(self) -> None:
        """Forward the gate to process listeners every ``GATE_SECONDS``
        (they cannot ask it per request)."""
        for process in self._started_processes:
            self._update_gate(process)
        loop = asyncio.get_running_loop()
        self._gate_timer = loop.call_later(GATE_SECONDS, self._push_gates)

    def _update_gate(self, process: ProcessListener) -> None:
        leader_only = process.leader_only
        process.update_gate(self._gate(leader_only), self._gate_expiry(leader_only))

    async def _start_listener(self, listener: Listener) -> None:
        thread = ListenerThread(
            listener.name,
            listener.handler,
            host=self._host,
            port=listener.port,
            max_body_bytes=listener.max_body_bytes,
            gate=lambda: self._gate(listener.leader_only),
        )
        await thread.start()
        self._listener_threads.append(thread)

    async def stop(self) -> None:
        """Close the listeners (their threads joined) and finish in-flight
        requests; idempotent."""
        if self._gate_timer is not None:
            self._gate_timer.cancel()
            self._gate_timer = None
        processes, self._started_processes = self._started_processes, []
        for process in processes:
            await process.stop()
        threads, self._listener_threads = self._listener_threads, []
        for thread in threads:
            await thread.stop()
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    @property
    def open_connections(self) -> int:
        """Connections open on the ops port now (``scheduler.connlimits``)."""
        return self._site.open_connections if self._site is not None else 0

    def listener_port(self, name: str) -> int:
        """The port a plugin listener actually listens on (useful with port 0)."""
        for thread in self._listener_threads:
            if thread.name == name:
                return thread.port
        for process in self._started_processes:
            if process.name == name:
                return process.port
        raise RuntimeError(f"plugin listener {name!r} is not started")

    @property
    def bound_port(self) -> int:
        """The port actually listened on (useful with port 0)."""
        if self._runner is None or not self._runner.addresses:
            raise RuntimeError("OpsServer is not started")
        return int(self._runner.addresses[0][1])

    # ------------------------------------------------------------ handlers
    @web.middleware
    async def _guarded(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        assert self._guard is not None
        decision = await self._guard.check(
            request.headers.get("Authorization"), request.path, request.method
        )
        if not decision.allowed:
            log.debug(
                "refused %s %s: %s",
                request.method,
                request.path,
                decision.reason or decision.status,
            )
            return _refusal(decision)
        return await handler(request)

    async def _metrics(self, _request: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(self._registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    async def _metrics_resources(self, _request: web.Request) -> web.Response:
        assert self._resource_metrics is not None
        return web.Response(
            body=generate_latest(self._resource_metrics),
            headers={"Content-Type": CONTENT_TYPE_LATEST},
        )

    def _health_root(self, endpoint: Endpoint) -> Handler:
        async def handler(request: web.Request) -> web.Response:
            query = request.query
            verbose = "verbose" in query
            return _text(render(self._health, endpoint, verbose, query.getall("exclude", [])))

        return handler

    def _health_check(self, endpoint: Endpoint) -> Handler:
        async def handler(request: web.Request) -> web.Response:
            response = render_one(self._health, endpoint, request.match_info["check"])
            if response is None:
                raise web.HTTPNotFound(text="404 page not found\n")
            return _text(response)

        return handler

    def _plugin_debug(self, plugin_handler: DebugHandler) -> Handler:
        async def handler(request: web.Request) -> web.Response:
            return await _call(request.path, plugin_handler, request, b"")

        return handler

    async def _configz(self, _request: web.Request) -> web.Response:
        if self._config_dump is None:
            return _json(404, {"error": "no configuration to show"})
        body: dict[str, Any] = {CONFIGZ_KEY: self._config_dump()}
        if self._config_warnings:
            body["warnings"] = self._config_warnings
        return _json(200, body)

    async def _debug_pod(self, request: web.Request) -> web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        attempts = self._diagnostics.attempts(namespace, name)
        if attempts is None:
            return _json(
                404, {"error": f"no scheduling attempts recorded for pod {namespace}/{name}"}
            )
        return _json(200, {"namespace": namespace, "name": name, "attempts": attempts})

    async def _debug_cache(self, _request: web.Request) -> web.Response:
        if self._cache_report is None:
            return _json(404, {"error": "no cache comparer"})
        try:
            report = await self._cache_report()
        except Exception as error:  # the API list failed: say so, keep serving
            return _json(503, {"error": f"cache comparer: {error}"})
        return _json(200, report)


class _WithoutFamilies:
    """The registry minus ``disabled`` families (kube-scheduler's
    ``--disabled-metrics``): a name matches a family, or a counter by its
    ``_total`` name, as upstream's flag names them."""

    def __init__(self, registry: CollectorRegistry, disabled: frozenset[str]) -> None:
        self._registry = registry
        self._disabled = disabled

    def collect(self) -> Iterator[Metric]:
        for family in self._registry.collect():
            names = {family.name, f"{family.name}_total"}
            if not names & self._disabled:
                yield family
