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
Without either (unit tests) the endpoints are plain and open.

Endpoints (upstream ``cmd/kube-scheduler/app/server.go``):
- ``/metrics``: Prometheus text exposition of the registry;
- ``/healthz``, ``/livez``, ``/readyz`` with ``?verbose``, ``?exclude=name`` and
  per-check paths ``/<endpoint>/<name>``;
- ``/configz``: ``{"componentconfig": <effective config>}`` (404 when none given);
- ``/debug/pods/{namespace}/{name}``: the pod's last scheduling attempts as JSON
  (404 with a JSON error when none are kept).
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable
from typing import Any, Protocol

import orjson
from aiohttp import web
from aiohttp.typedefs import Handler
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from scheduler.delegation import Decision
from scheduler.health import Endpoint, HealthChecks, HealthResponse, render, render_one

log = logging.getLogger(__name__)

CONFIGZ_KEY = "componentconfig"
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


def _json(status: int, payload: object) -> web.Response:
    body = orjson.dumps(payload, default=str, option=orjson.OPT_NON_STR_KEYS)
    return web.Response(status=status, body=body, content_type="application/json")


def _text(response: HealthResponse) -> web.Response:
    return web.Response(
        status=response.status,
        body=response.body.encode(),
        headers={"Content-Type": _TEXT, "X-Content-Type-Options": "nosniff"},
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
        ssl_context: ssl.SSLContext | None = None,
        guard: RequestGuard | None = None,
    ) -> None:
        self._host = host
        self._port = port
        self._registry = registry
        self._health = health
        self._diagnostics = diagnostics
        self._config_dump = config_dump
        self._ssl_context = ssl_context
        self._guard = guard
        self._runner: web.AppRunner | None = None

    @property
    def scheme(self) -> str:
        return "https" if self._ssl_context is not None else "http"

    def app(self) -> web.Application:
        """The routes, unstarted (``start`` serves them)."""
        middlewares = [self._guarded] if self._guard is not None else []
        app = web.Application(middlewares=middlewares)
        app.router.add_get("/metrics", self._metrics)
        for endpoint in Endpoint:
            app.router.add_get(f"/{endpoint}", self._health_root(endpoint))
            app.router.add_get(f"/{endpoint}/{{check}}", self._health_check(endpoint))
        app.router.add_get("/configz", self._configz)
        app.router.add_get("/debug/pods/{namespace}/{name}", self._debug_pod)
        return app

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("OpsServer already started")
        runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await runner.setup()
        try:
            await web.TCPSite(runner, self._host, self._port, ssl_context=self._ssl_context).start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner

    async def stop(self) -> None:
        """Close the listener and finish in-flight requests; idempotent."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

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

    async def _configz(self, _request: web.Request) -> web.Response:
        if self._config_dump is None:
            return _json(404, {"error": "no configuration to show"})
        return _json(200, {CONFIGZ_KEY: self._config_dump()})

    async def _debug_pod(self, request: web.Request) -> web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        attempts = self._diagnostics.attempts(namespace, name)
        if attempts is None:
            return _json(
                404, {"error": f"no scheduling attempts recorded for pod {namespace}/{name}"}
            )
        return _json(200, {"namespace": namespace, "name": name, "attempts": attempts})
