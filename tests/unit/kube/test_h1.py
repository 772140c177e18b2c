"""The write lane (``scheduler.kube.h1``): its answer parser as a table fed
whole and byte by byte, and its connection pool against scripted servers on
loopback (plain and TLS): reuse, a server that closes or resets, timeouts,
the connection bound, and ``close()``."""

from __future__ import annotations

import asyncio
import datetime
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from scheduler.kube.errors import TransportError
from scheduler.kube.h1 import MAX_HEADER_BYTES, Answer, WriteLane, _Malformed, _Parser
from scheduler.ops.tls import self_signed_pem
from tests.support.clock import FakeClock
from tests.support.wait import eventually

CREATED = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
CHUNKED = (
    b"HTTP/1.1 409 Conflict\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n"
)


@dataclass(frozen=True)
class ParseCase:
    name: str
    wire: bytes
    status: int
    body: bytes
    keep_alive: bool
    at_close: bool = False  # the answer ends only when the peer closes


PARSE_CASES = [
    ParseCase("content length", CREATED, 201, b"{}", True),
    ParseCase("chunked, with a chunk extension", CHUNKED, 409, b"hello world", True),
    ParseCase(
        "chunked with trailers",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-T: 1\r\n\r\n",
        200,
        b"ok",
        True,
    ),
    ParseCase(
        "Connection: close",
        b"HTTP/1.1 201 Created\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
        201,
        b"",
        False,
    ),
    ParseCase("HTTP/1.0", b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", 200, b"x", False),
    ParseCase("204 has no body", b"HTTP/1.1 204 No Content\r\n\r\n", 204, b"", True),
    ParseCase(
        "no length: the body runs to the close",
        b"HTTP/1.1 500 Oops\r\n\r\nbroken",
        500,
        b"broken",
        False,
        at_close=True,
    ),
]


def _parse(pieces: list[bytes], at_close: bool) -> _Parser:
    parser = _Parser()
    whole = False
    for piece in pieces:
        assert not whole, "bytes after the whole answer"
        whole = parser.feed(piece)
    if at_close:
        assert not whole
        whole = parser.at_close()
    assert whole
    return parser


@pytest.mark.parametrize("case", PARSE_CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("split", ["whole", "byte by byte"])
def test_the_parser_reads_each_answer_shape(case: ParseCase, split: str) -> None:
    wire = case.wire
    pieces = [wire] if split == "whole" else [wire[i : i + 1] for i in range(len(wire))]
    parser = _parse(pieces, case.at_close)
    assert (parser.status, parser.body, parser.keep_alive) == (
        case.status,
        case.body,
        case.keep_alive,
    )
    assert not parser.leftover


@pytest.mark.parametrize(
    ("name", "wire"),
    [
        ("not HTTP", b"SSH-2.0-OpenSSH\r\n\r\n"),
        ("status without digits", b"HTTP/1.1 abc\r\n\r\n"),
        ("bad Content-Length", b"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n"),
        ("bad chunk size", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
        (
            "chunk without its CRLF",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXX",
        ),
        ("interim answer", b"HTTP/1.1 100 Continue\r\n\r\n"),
        ("headers too large", b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * (MAX_HEADER_BYTES // 6 + 1)),
        ("body too large", b"HTTP/1.1 200 OK\r\nContent-Length: 99999999\r\n\r\n"),
    ],
)
def test_the_parser_refuses_what_is_not_an_answer(name: str, wire: bytes) -> None:
    with pytest.raises(_Malformed):
        _Parser().feed(wire)


# ------------------------------------------------------------------ the pool
Reply = Callable[[bytes, asyncio.StreamWriter], Awaitable[bool]]  # False: close after


@dataclass
class ScriptedServer:
    """Answers each request with ``reply``; counts connections and requests."""

    reply: Reply
    connections: int = 0
    open_now: int = 0
    most_open: int = 0
    requests: list[bytes] = field(default_factory=list)
    writers: list[asyncio.StreamWriter] = field(default_factory=list)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open_now += 1
        self.most_open = max(self.most_open, self.open_now)
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                if not await self.reply(request, writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.open_now -= 1
            writer.close()


async def created(_request: bytes, writer: asyncio.StreamWriter) -> bool:
    writer.write(CREATED)
    await writer.drain()
    return True


@dataclass
class Setup:
    server: ScriptedServer
    lane: WriteLane
    clock: FakeClock


def _lane(
    port: int, clock: FakeClock, *, tls: ssl.SSLContext | None = None, **kw: float
) -> WriteLane:
    return WriteLane(
        host="127.0.0.1",
        port=port,
        authority=f"127.0.0.1:{port}",
        ssl_context=tls,
        server_hostname=None,
        max_connections=int(kw.get("max_connections", 4)),
        idle_timeout=kw.get("idle_timeout", 30.0),
        connect_timeout=5.0,
        clock=clock,
    )


@pytest.fixture
async def serve() -> AsyncIterator[Callable[..., Awaitable[Setup]]]:
    opened: list[tuple[asyncio.Server, WriteLane]] = []

    async def start(reply: Reply = created, **kw: float) -> Setup:
        server = ScriptedServer(reply)
        listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        clock = FakeClock()
        lane = _lane(port, clock, **kw)
        opened.append((listener, lane))
        return Setup(server, lane, clock)

    yield start
    for listener, lane in opened:
        await lane.close()
        listener.close()
        await listener.wait_closed()


async def _post(lane: WriteLane, within: float = 5.0) -> Answer:
    return await lane.post("/api/v1/x?y=1", {"Content-Type": "a/b"}, b"body", within)


async def test_sequential_posts_share_one_connection(
    serve: Callable[..., Awaitable[Setup]],
) -> None:
    setup = await serve()
    answers = [await _post(setup.lane) for _ in range(3)]
    assert answers == [Answer(201, b"{}")] * 3
    assert (setup.lane.opened, setup.server.connections) == (1, 1)
    first = setup.server.requests[0]
    assert first.startswith(b"POST /api/v1/x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"\r\nContent-Type: a/b\r\nContent-Length: 4\r\n\r\nbody" in first


async def test_a_connection_close_answer_is_not_reused(
    serve: Callable[..., Awaitable[Setup]],
) -> None:
    async def closing(_request: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 201 Created\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        return False

    setup = await serve(closing)
    assert [(await _post(setup.lane)).status for _ in range(2)] == [201, 201]
    assert setup.lane.opened == 2


async def test_a_connection_the_server_closed_while_idle_is_replaced(
    serve: Callable[..., Awaitable[Setup]],
) -> None:
    setup = await serve()
    await _post(setup.lane)
    setup.server.writers[0].close()

    async def closed_here() -> bool:
        return setup.lane.idle() == 0

    await eventually(closed_here, timeout=10, what="the lane saw the close")
    assert (await _post(setup.lane)).status == 201
    assert setup.lane.opened == 2


async def test_a_connection_idle_past_the_timeout_is_not_used(
    serve: Callable[..., Awaitable[Setup]],
) -> None:
    setup = await serve(idle_timeout=30.0)
    await _post(setup.lane)
    setup.clock.advance(29.0)
    await _post(setup.lane)
    assert setup.lane.opened == 1
    setup.clock.advance(31.0)
    await _post(setup.lane)
    assert setup.lane.opened == 2


@pytest.mark.parametrize(
    ("name", "wire"),
    [
        ("reset before any answer", b""),
        ("closed mid-headers", b"HTTP/1.1 201 Crea"),
        ("closed mid-body", b"HTTP/1.1 201 Created\r\nContent-Length: 10\r\n\r\n{}"),
        ("garbage", b"hello\r\n\r\n"),
    ],
)
async def test_no_whole_answer_is_a_transport_error_and_the_connection_goes(
    serve: Callable[..., Awaitable[Setup]], name: str, wire: bytes
) -> None:
    async def broken(_request: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(wire)
        await writer.drain()
        return False

    setup = await serve(broken)
    with pytest.raises(TransportError):
        await _post(setup.lane)
    setup.server.reply = created
    assert (await _post(setup.lane)).status == 201
    assert setup.lane.opened == 2


async def test_no_answer_within_the_timeout_is_a_transport_error(
    serve: Callable[..., Awaitable[Setup]],
) -> None:
    release = asyncio.Event()

    async def silent(_request: bytes, _writer: asyncio.StreamWriter) -> bool:
        await release.wait()
        return False

    setup = await serve(silent)
    with pytest.raises(TransportError, match="no answer within"):
        await _post(setup.lane, within=0.2)
    release.set()


async def test_requests_beyond_the_connection_bound_wait_for_one(
    serve: Callable[..., Awaitable[Setup]],
) -> None:
    gate = asyncio.Event()

    async def held(_request: bytes, writer: asyncio.StreamWriter) -> bool:
        await gate.wait()
        return await created(_request, writer)

    setup = await serve(held, max_connections=2)
    posts = [asyncio.create_task(_post(setup.lane)) for _ in range(5)]

    async def two_sent() -> bool:
        return len(setup.server.requests) >= 2

    await eventually(two_sent, timeout=10, what="two requests at the server")
    for _ in range(20):  # give the other three every chance to (wrongly) connect
        await asyncio.sleep(0)
    assert len(setup.server.requests) == 2  # the other three wait for a connection
    gate.set()
    assert [answer.status for answer in await asyncio.gather(*posts)] == [201] * 5
    assert setup.server.most_open == 2


async def test_close_leaves_no_connection_open(serve: Callable[..., Awaitable[Setup]]) -> None:
    setup = await serve()
    await asyncio.gather(*(_post(setup.lane) for _ in range(3)))
    assert setup.server.connections >= 1
    await setup.lane.close()

    async def all_closed() -> bool:
        return setup.server.open_now == 0

    await eventually(all_closed, timeout=10, what="the server saw every connection close")
    with pytest.raises(TransportError, match="closed"):
        await _post(setup.lane)


async def test_a_post_over_tls_verifies_the_server_and_gets_its_answer(tmp_path: Path) -> None:
    cert, key = self_signed_pem(["api.internal"], datetime.datetime.now(datetime.UTC))
    (tmp_path / "cert.pem").write_bytes(cert)
    (tmp_path / "key.pem").write_bytes(key)
    serving = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    serving.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    server = ScriptedServer(created)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0, ssl=serving)
    port = listener.sockets[0].getsockname()[1]
    trusting = ssl.create_default_context(cadata=cert.decode())  # checks 127.0.0.1 too
    lane = _lane(port, FakeClock(), tls=trusting)
    try:
        assert [(await _post(lane)).status for _ in range(2)] == [201, 201]
        assert lane.opened == 1
    finally:
        await lane.close()
        listener.close()
        await listener.wait_closed()
