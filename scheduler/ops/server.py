"""The operations HTTP server: /metrics, /healthz, /livez, /readyz, /configz, /debug/pods.

A thin aiohttp adapter: the health semantics live in ``scheduler.ops.health``, the
metrics in the registry passed in, the attempt history behind
``DiagnosticsSource``. The composition root owns the server's lifetime
(``start``/``stop``); the server starts no task of its own beyond aiohttp's
listener.

Served over HTTPS when given an ``ssl.SSLContext`` (``scheduler.ops.tls``) and,
when given a ``RequestGuard`` (``scheduler.ops.delegation.DelegatedAuth``), every
request is authenticated and authorized before its handler runs: 401 or 403
with a JSON ``Status`` body otherwise, as kube-scheduler's secure serving.
Without either (unit tests) the endpoints are plain and open. The listening
socket has a header-read timeout, a TLS handshake timeout and a connection
cap (``scheduler.ops.connlimits.Limits``), which aiohttp itself lacks; a request
line of another version than HTTP/1.0 or 1.1 is answered 505 and closed, as
Go's net/http does (``_http1_only``; aiohttp would serve ``HTTP/2.0``).

Endpoints (upstream ``cmd/kube-scheduler/app/server.go``):
- ``/metrics``: Prometheus text exposition of the registry, without the
  families named by ``--disabled-metrics``;
- ``/metrics/resources``: ``kube_pod_resource_request``/``_limit`` per pod
  (``scheduler.ops.podresources``), collected at scrape time;
- ``/healthz``, ``/livez``, ``/readyz`` with ``?verbose``, ``?exclude=name`` and
  per-check paths ``/<endpoint>/<name>``;
- ``/configz``: ``{"componentconfig": <effective config>}`` (404 when none given),
  plus ``"warnings"`` (dangerous choices, ``scheduler.config.advice``) if any;
- ``/debug/pods/{namespace}/{name}``: the pod's last scheduling attempts as JSON
  (404 with a JSON error when none are kept);
- ``/debug/plugins/<path>``: GET routes plugins registered (``PluginHttp.debug``).
- ``/debug/cache``: the cache comparer's report as JSON (a fresh list from the
  API server compared with the cache; 503 with a JSON error if the list fails).

Plugin listeners (``PluginHttp.listen``) are not served here: they have
their own ports, hosted by ``scheduler.services.hosting.ListenerHost``. The
only thread here is aiohttp's listener on the daemon's loop.
"""

from __future__ import annotations

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

from scheduler.framework.services import DebugHandler, HttpHandler, HttpRequest
from scheduler.ops.connlimits import LimitedSite, Limits
from scheduler.ops.delegation import Decision
from scheduler.ops.health import Endpoint, HealthChecks, HealthResponse, render, render_one

log = logging.getLogger(__name__)

CONFIGZ_KEY = "componentconfig"
# How long stop() lets ops requests in flight finish (aiohttp's default is
# 60 s): the exit, leadership loss included, must not wait on a client.
SHUTDOWN_GRACE_SECONDS = 2.0
_TEXT = "text/plain; charset=utf-8"


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
        debug_routes: dict[str, DebugHandler] | None = None,
        cache_report: Callable[[], Awaitable[dict[str, Any]]] | None = None,
        ssl_context: ssl.SSLContext | None = None,
        guard: RequestGuard | None = None,
        limits: Limits | None = None,
    ) -> None:
        self._limits = limits or Limits()
        self._site: LimitedSite | None = None
        self._debug_routes = dict(debug_routes or {})
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

    async def stop(self) -> None:
        """Finish in-flight requests (at most ``SHUTDOWN_GRACE_SECONDS``) and
        close the port; idempotent."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    @property
    def open_connections(self) -> int:
        """Connections open on the ops port now (``scheduler.ops.connlimits``)."""
        return self._site.open_connections if self._site is not None else 0

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
