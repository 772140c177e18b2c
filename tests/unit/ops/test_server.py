"""OpsServer over real HTTP on 127.0.0.1: health endpoints with upstream semantics,
/metrics, /configz and /debug/pods."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson
import pytest
from prometheus_client import CollectorRegistry

from scheduler.cycle.contracts import AttemptResult
from scheduler.ops.diagnostics import AttemptLog
from scheduler.ops.health import CheckResult, HealthChecks, scheduler_health
from scheduler.ops.metrics import SchedulerMetrics
from scheduler.ops.server import OpsServer


@dataclass
class World:
    """The state the health checks read, set by each case."""

    synced: bool = True
    shutting_down: bool = False
    leader_election: bool = False
    lease_ok: bool = True
    extra_readiness: dict[str, Callable[[], CheckResult]] = field(default_factory=dict)

    def health(self) -> HealthChecks:
        health = scheduler_health(
            shutting_down=lambda: self.shutting_down,
            handlers_synced=lambda: self.synced,
            leader_election=self._lease if self.leader_election else None,
        )
        for name, check in self.extra_readiness.items():
            health.add_readiness(name, check)
        return health

    def _lease(self) -> CheckResult:
        return (True, "") if self.lease_ok else (False, "lease not renewed for 40s")


def broken() -> CheckResult:
    raise RuntimeError("boom")


@dataclass
class Ops:
    server: OpsServer
    session: aiohttp.ClientSession
    registry: CollectorRegistry
    attempts: AttemptLog

    async def get(self, path: str) -> tuple[int, str, dict[str, str]]:
        url = f"http://127.0.0.1:{self.server.bound_port}{path}"
        async with self.session.get(url) as response:
            return response.status, await response.text(), dict(response.headers)


@asynccontextmanager
async def started(
    world: World, config_dump: Callable[[], dict[str, Any]] | None = None
) -> AsyncIterator[Ops]:
    registry = CollectorRegistry()
    attempts = AttemptLog(max_pods=10, attempts_per_pod=3)
    server = OpsServer("127.0.0.1", 0, registry, world.health(), attempts, config_dump=config_dump)
    await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            yield Ops(server, session, registry, attempts)
    finally:
        await server.stop()


@pytest.fixture
async def ops() -> AsyncIterator[Ops]:
    async with started(World(), config_dump=lambda: {"parallelism": 16}) as each:
        yield each


HEALTH_CASES = [
    pytest.param(World(), "/readyz", 200, "ok", id="ready"),
    pytest.param(
        World(leader_election=True),
        "/readyz?verbose",
        200,
        "[+]leaderElection ok\n[+]shutdown ok\n[+]sched-handler-sync ok\nreadyz check passed\n",
        id="ready verbose lists every check in order",
    ),
    pytest.param(
        World(synced=False),
        "/readyz",
        500,
        "[+]shutdown ok\n[-]sched-handler-sync failed: reason withheld\nreadyz check failed\n",
        id="not ready until handlers synced",
    ),
    pytest.param(
        World(shutting_down=True),
        "/readyz",
        500,
        "[-]shutdown failed: reason withheld\n[+]sched-handler-sync ok\nreadyz check failed\n",
        id="not ready once shutdown began",
    ),
    pytest.param(
        World(synced=False), "/readyz?exclude=sched-handler-sync", 200, "ok", id="excluded failure"
    ),
    pytest.param(
        World(synced=False),
        "/readyz?exclude=sched-handler-sync&verbose",
        200,
        "[+]shutdown ok\n[+]sched-handler-sync excluded: ok\nreadyz check passed\n",
        id="excluded check shown in verbose",
    ),
    pytest.param(
        World(),
        "/readyz?exclude=nope&exclude=shutdown&verbose=1",
        200,
        "[+]shutdown excluded: ok\n[+]sched-handler-sync ok\n"
        'warn: some health checks cannot be excluded: no matches for "nope"\n'
        "readyz check passed\n",
        id="unknown exclusion warns",
    ),
    pytest.param(
        World(extra_readiness={"broken": broken}),
        "/readyz",
        500,
        "[+]shutdown ok\n[+]sched-handler-sync ok\n[-]broken failed: reason withheld\n"
        "readyz check failed\n",
        id="raising check fails",
    ),
    pytest.param(World(), "/readyz/shutdown", 200, "ok", id="one check ok"),
    pytest.param(
        World(synced=False),
        "/readyz/sched-handler-sync",
        500,
        "internal server error: waiting for handlers to sync\n",
        id="one check shows its reason",
    ),
    pytest.param(
        World(extra_readiness={"broken": broken}),
        "/readyz/broken",
        500,
        "internal server error: RuntimeError: boom\n",
        id="one raising check shows the exception",
    ),
    pytest.param(World(), "/readyz/nope", 404, "404 page not found\n", id="unknown check"),
    pytest.param(World(synced=False), "/livez", 200, "ok", id="live while not ready"),
    pytest.param(
        World(leader_election=True, lease_ok=False),
        "/livez?verbose",
        200,
        "[+]ping ok\nlivez check passed\n",
        id="livez is ping only",
    ),
    pytest.param(World(), "/livez/ping", 200, "ok", id="ping subpath"),
    pytest.param(
        World(synced=False),
        "/healthz?verbose",
        200,
        "[+]ping ok\nhealthz check passed\n",
        id="healthz is ping without leader election",
    ),
    pytest.param(
        World(leader_election=True, lease_ok=False),
        "/healthz",
        500,
        "[-]leaderElection failed: reason withheld\nhealthz check failed\n",
        id="healthz fails with a stale lease",
    ),
    pytest.param(
        World(leader_election=True, lease_ok=False),
        "/readyz/leaderElection",
        500,
        "internal server error: lease not renewed for 40s\n",
        id="lease watchdog on readyz",
    ),
]


@pytest.mark.parametrize(("world", "path", "status", "body"), HEALTH_CASES)
async def test_health_endpoint(world: World, path: str, status: int, body: str) -> None:
    async with started(world) as ops:
        got_status, got_body, headers = await ops.get(path)

        assert (got_status, got_body) == (status, body)
        if status != 404:
            assert headers["Content-Type"] == "text/plain; charset=utf-8"


async def test_readiness_follows_state_changes() -> None:
    world = World(synced=False)
    async with started(world) as ops:
        before, _, _ = await ops.get("/readyz")
        world.synced = True
        ready, _, _ = await ops.get("/readyz")
        world.shutting_down = True
        after, _, _ = await ops.get("/readyz")

    assert (before, ready, after) == (500, 200, 500)


async def test_metrics_serves_the_registry_passed_in(ops: Ops) -> None:
    SchedulerMetrics(ops.registry).attempt(AttemptResult.SCHEDULED, "default-scheduler", 0.1)

    status, body, headers = await ops.get("/metrics")

    assert status == 200
    assert headers["Content-Type"].startswith("text/plain; version=")
    assert (
        'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1.0'
        in body.splitlines()
    )


async def test_configz_wraps_the_effective_config(ops: Ops) -> None:
    status, body, _ = await ops.get("/configz")

    assert status == 200
    assert orjson.loads(body) == {"componentconfig": {"parallelism": 16}}


async def test_configz_without_config_is_not_found() -> None:
    async with started(World()) as ops:
        status, body, _ = await ops.get("/configz")

    assert status == 404
    assert "error" in orjson.loads(body)


async def test_debug_pod_returns_recorded_attempts(ops: Ops) -> None:
    first = {"cycle": 1, "result": "unschedulable", "nodes": {"n1": {"plugin": "NodeAffinity"}}}
    second = {"cycle": 4, "result": "scheduled", "scores": {"n2": 87}}
    ops.attempts.record("team-a/web-0", first)
    ops.attempts.record("team-a/web-0", second)

    status, body, _ = await ops.get("/debug/pods/team-a/web-0")

    assert status == 200
    assert orjson.loads(body) == {
        "namespace": "team-a",
        "name": "web-0",
        "attempts": [first, second],
    }


async def test_debug_unknown_pod_is_a_json_404(ops: Ops) -> None:
    status, body, headers = await ops.get("/debug/pods/team-a/ghost")

    assert status == 404
    assert headers["Content-Type"].startswith("application/json")
    assert orjson.loads(body) == {"error": "no scheduling attempts recorded for pod team-a/ghost"}


async def test_lifecycle() -> None:
    server = OpsServer("127.0.0.1", 0, CollectorRegistry(), HealthChecks(), AttemptLog())
    with pytest.raises(RuntimeError, match="not started"):
        _ = server.bound_port

    await server.start()
    port = server.bound_port
    with pytest.raises(RuntimeError, match="already started"):
        await server.start()
    await server.stop()
    await server.stop()

    assert port > 0
    with pytest.raises(RuntimeError, match="not started"):
        _ = server.bound_port
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectionError):
            await session.get(f"http://127.0.0.1:{port}/livez")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        pytest.param("", "invalid", id="empty name"),
        pytest.param("a/b", "invalid", id="slash in name"),
        pytest.param("shutdown", "already added", id="duplicate"),
    ],
)
def test_health_checks_reject_bad_names(name: str, message: str) -> None:
    health = World().health()

    with pytest.raises(ValueError, match=message):
        health.add_readiness(name, lambda: (True, ""))


async def _serve_report(report: Callable[[], Any]) -> tuple[int, Any]:
    server = OpsServer(
        "127.0.0.1", 0, CollectorRegistry(), HealthChecks(), AttemptLog(), cache_report=report
    )
    await server.start()
    try:
        url = f"http://127.0.0.1:{server.bound_port}/debug/cache"
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            return response.status, orjson.loads(await response.read())
    finally:
        await server.stop()


async def test_debug_cache_serves_the_comparer_report() -> None:
    report = {"nodes": 2, "pods": 3, "assumed": 0, "differences": []}

    async def compare() -> dict[str, Any]:
        return report

    assert await _serve_report(compare) == (200, report)


async def test_debug_cache_says_why_when_the_list_fails() -> None:
    async def compare() -> dict[str, Any]:
        raise ConnectionError("apiserver down")

    assert await _serve_report(compare) == (503, {"error": "cache comparer: apiserver down"})


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        pytest.param(b"HTTP/2.0", b"HTTP/1.1 505 ", id="HTTP/2.0 in a text request line: 505"),
        pytest.param(b"HTTP/3.0", b"HTTP/1.0 400 ", id="HTTP/3.0: refused by the parser"),
        pytest.param(b"HTTP/1.1", b"HTTP/1.1 200 ", id="HTTP/1.1 served"),
        pytest.param(b"HTTP/1.0", b"HTTP/1.0 200 ", id="HTTP/1.0 served"),
    ],
)
async def test_request_versions_other_than_http1_are_refused_505_as_http11(
    version: bytes, expected: bytes
) -> None:
    """Go's net/http answers 505 to a request line that is not HTTP/1.x
    (``http1ServerSupportsRequest``); aiohttp served it and echoed the
    version (``HTTP/2.0 200 OK``), a status line no HTTP/1 client reads."""
    server = OpsServer("127.0.0.1", 0, CollectorRegistry(), HealthChecks(), AttemptLog())
    await server.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.bound_port)
        writer.write(b"GET /livez " + version + b"\r\nHost: x\r\nConnection: close\r\n\r\n")
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
    finally:
        await server.stop()
    assert answer.startswith(expected), answer[:200]
