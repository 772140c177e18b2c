"""Plugin endpoints over real HTTP: a plugin's listener on its own port (any
method and path, body cut at its limit, 503 while gated, 500 on a crash) and
its GET debug routes on the ops port; start steps run in order and a failure
names the plugin."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from scheduler.diagnostics import AttemptLog
from scheduler.framework import HttpRequest, HttpResponse
from scheduler.health import HealthChecks
from scheduler.pluginservices import DaemonPluginServices
from scheduler.server import OpsServer


def echo(request: HttpRequest) -> HttpResponse:
    text = f"{request.method} {request.path} {len(request.body)}:{request.body.decode()}"
    return HttpResponse(200, "text/plain", text.encode())


def crash(_request: HttpRequest) -> HttpResponse:
    raise RuntimeError("boom")


class Gate:
    refusal: str | None = None

    def __call__(self, leader_only: bool) -> str | None:
        return self.refusal if leader_only else None


@asynccontextmanager
async def serving(gate: Gate) -> AsyncIterator[tuple[OpsServer, aiohttp.ClientSession]]:
    services = DaemonPluginServices(CollectorRegistry())
    services.listen("echo", 0, echo, max_body_bytes=8)
    services.listen("open", 0, echo, max_body_bytes=8, leader_only=False)
    services.listen("crash", 0, crash, max_body_bytes=8)
    services.debug("/echo/state", echo)
    server = OpsServer(
        "127.0.0.1",
        0,
        CollectorRegistry(),
        HealthChecks(),
        AttemptLog(),
        listeners=services.listeners,
        debug_routes=services.debug_routes,
        gate=gate,
    )
    await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            yield server, session
    finally:
        await server.stop()


async def call(
    session: aiohttp.ClientSession, port: int, method: str, path: str, body: bytes = b""
) -> tuple[int, str, str]:
    async with session.request(method, f"http://127.0.0.1:{port}{path}", data=body) as response:
        return response.status, response.headers["Content-Type"], await response.text()


async def test_listener_serves_every_method_and_path_and_cuts_the_body() -> None:
    async with serving(Gate()) as (server, session):
        port = server.listener_port("echo")
        assert await call(session, port, "POST", "/", b"12345") == (
            200,
            "text/plain",
            "POST / 5:12345",
        )
        status, _, text = await call(session, port, "PUT", "/any/where", b"0123456789abcdef")
        assert (status, text) == (200, "PUT /any/where 8:01234567")


async def test_gated_listener_answers_503_and_ungated_one_serves() -> None:
    gate = Gate()
    gate.refusal = "not the leader"
    async with serving(gate) as (server, session):
        assert await call(session, server.listener_port("echo"), "POST", "/") == (
            503,
            "text/plain",
            "not the leader",
        )
        status, _, _ = await call(session, server.listener_port("open"), "POST", "/")
        assert status == 200
        gate.refusal = None
        status, _, _ = await call(session, server.listener_port("echo"), "POST", "/")
        assert status == 200


async def test_a_crashing_handler_answers_500() -> None:
    async with serving(Gate()) as (server, session):
        assert await call(session, server.listener_port("crash"), "POST", "/") == (
            500,
            "text/plain",
            "internal error",
        )


async def test_debug_route_on_the_ops_port() -> None:
    async with serving(Gate()) as (server, session):
        status, _, text = await call(session, server.bound_port, "GET", "/debug/plugins/echo/state")
        assert (status, text) == (200, "GET /debug/plugins/echo/state 0:")


def test_one_port_one_listener_and_unique_debug_paths() -> None:
    services = DaemonPluginServices(CollectorRegistry())
    services.listen("a", 10299, echo, max_body_bytes=1)
    with pytest.raises(ValueError, match="already used by 'a'"):
        services.listen("b", 10299, echo, max_body_bytes=1)
    services.debug("x", echo)
    with pytest.raises(ValueError, match="registered twice"):
        services.debug("/x/", echo)


async def test_start_steps_run_in_order_and_a_failure_names_the_step() -> None:
    services = DaemonPluginServices(CollectorRegistry())
    ran: list[str] = []

    async def first() -> None:
        ran.append("first")

    async def failing() -> None:
        ran.append("failing")
        raise TimeoutError("no config within 5s")

    services.on_start("First", first)
    services.on_start("Failing", failing)
    with pytest.raises(RuntimeError, match="Failing: no config within 5s"):
        await services.start()
    assert ran == ["first", "failing"]


def test_workers_are_registered_once_by_name() -> None:
    services = DaemonPluginServices(CollectorRegistry())

    async def work() -> None:
        return None

    services.run("migrations", work)
    with pytest.raises(ValueError, match="registered twice"):
        services.run("migrations", work)
    assert [name for name, _ in services.workers] == ["migrations"]
