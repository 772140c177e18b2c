"""The ops port's connection limits (issue 20 #6): a connection whose request
header does not arrive within the header-read timeout is closed, one beyond
the cap is closed at once, and complete requests are unaffected."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from prometheus_client import CollectorRegistry

from scheduler.ops.connlimits import HEADER_TIMEOUT_SECONDS, Limits
from scheduler.ops.diagnostics import AttemptLog
from scheduler.ops.health import HealthChecks
from scheduler.ops.server import OpsServer
from tests.support.wait import eventually

DEADLINE = 10.0  # seconds any expected close may take on a loaded machine


@asynccontextmanager
async def _serving(limits: Limits) -> AsyncIterator[OpsServer]:
    server = OpsServer(
        "127.0.0.1", 0, CollectorRegistry(), HealthChecks(), AttemptLog(), limits=limits
    )
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def _open(
    server: OpsServer, first: bytes
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.bound_port)
    writer.write(first)
    await writer.drain()
    return reader, writer


async def _closed_by_server(reader: asyncio.StreamReader) -> bool:
    """True once the server closed the connection (EOF or reset)."""
    try:
        rest = await asyncio.wait_for(reader.read(), DEADLINE)
    except ConnectionError:
        return True
    return rest == b"" or (rest.endswith(b"") and reader.at_eof())


def test_the_default_header_timeout_is_upstreams() -> None:
    assert Limits().header_timeout == HEADER_TIMEOUT_SECONDS == 32.0


@pytest.mark.parametrize(
    "partial",
    [
        pytest.param(b"", id="nothing sent"),
        pytest.param(b"GET /livez HTTP/1.1\r\n", id="request line only"),
        pytest.param(b"GET /livez HTTP/1.1\r\nHost: x\r\nX-Slow: a", id="header unfinished"),
    ],
)
async def test_an_unfinished_header_is_closed_after_the_header_timeout(partial: bytes) -> None:
    async with _serving(Limits(header_timeout=0.2)) as server:
        clients = [await _open(server, partial) for _ in range(5)]
        await eventually(lambda: _all_closed(server), timeout=DEADLINE, what="connections closed")
        for reader, writer in clients:
            assert await _closed_by_server(reader)
            writer.close()


async def _all_closed(server: OpsServer) -> bool:
    return server.open_connections == 0


async def test_a_complete_request_is_answered_despite_a_short_header_timeout() -> None:
    async with _serving(Limits(header_timeout=0.2)) as server:
        reader, writer = await _open(
            server, b"GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        answer = await asyncio.wait_for(reader.read(), DEADLINE)
        writer.close()
    assert answer.startswith(b"HTTP/1.1 200")


async def test_connections_beyond_the_cap_are_closed_at_once() -> None:
    async with _serving(Limits(header_timeout=600, max_connections=3)) as server:
        held = [await _open(server, b"GET /livez HTTP/1.1\r\n") for _ in range(3)]

        async def three_open() -> bool:
            return server.open_connections == 3

        await eventually(three_open, timeout=DEADLINE, what="three connections open")
        reader, writer = await _open(server, b"")
        assert await _closed_by_server(reader)
        writer.close()
        assert server.open_connections == 3
        for _, each in held:
            each.close()
