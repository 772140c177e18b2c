"""Plugin endpoints over real HTTP: a plugin's listener on its own port (any
method and path, body cut at its limit, 503 while gated, 500 on a crash),
served from its own thread (it answers while the daemon's loop is blocked; a
response's ``after`` runs on the daemon's loop) and its GET debug routes on
the ops port; start steps run in order and a failure names the plugin."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import selectors
import socket
import sys
import threading
import time
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

import scheduler.services.thread as listener_module
from scheduler.framework import HttpRequest, HttpResponse, ListenerLimits
from scheduler.ops.diagnostics import AttemptLog
from scheduler.ops.health import HealthChecks
from scheduler.ops.server import OpsServer
from scheduler.services.collector import DaemonPluginServices
from scheduler.services.hosting import ListenerHost
from scheduler.services.thread import (
    ACCEPT_BACKOFF_SECONDS,
    LISTENER_SWITCH_INTERVAL,
    SWITCH_INTERVAL_ENV,
    HttpCore,
    ListenerThread,
    listener_switch_interval,
    switch_interval,
)


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
async def serving(
    gate: Gate,
) -> AsyncIterator[tuple[OpsServer, ListenerHost, aiohttp.ClientSession]]:
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
        debug_routes=services.debug_routes,
    )
    listeners = ListenerHost("127.0.0.1", services.listeners, gate=gate)
    await server.start()
    await listeners.start()
    try:
        async with aiohttp.ClientSession() as session:
            yield server, listeners, session
    finally:
        await listeners.stop()
        await server.stop()


async def call(
    session: aiohttp.ClientSession, port: int, method: str, path: str, body: bytes = b""
) -> tuple[int, str, str]:
    async with session.request(method, f"http://127.0.0.1:{port}{path}", data=body) as response:
        return response.status, response.headers["Content-Type"], await response.text()


async def test_listener_serves_every_method_and_path_and_cuts_the_body() -> None:
    async with serving(Gate()) as (_server, listeners, session):
        port = listeners.port("echo")
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
    async with serving(gate) as (_server, listeners, session):
        assert await call(session, listeners.port("echo"), "POST", "/") == (
            503,
            "text/plain",
            "not the leader",
        )
        status, _, _ = await call(session, listeners.port("open"), "POST", "/")
        assert status == 200
        gate.refusal = None
        status, _, _ = await call(session, listeners.port("echo"), "POST", "/")
        assert status == 200


async def test_a_crashing_handler_answers_500() -> None:
    async with serving(Gate()) as (_server, listeners, session):
        assert await call(session, listeners.port("crash"), "POST", "/") == (
            500,
            "text/plain",
            "internal error",
        )


async def test_debug_route_on_the_ops_port() -> None:
    async with serving(Gate()) as (server, _listeners, session):
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


async def test_a_listener_answers_while_the_daemons_loop_is_blocked() -> None:
    async with serving(Gate()) as (_server, listeners, _session):
        port = listeners.port("echo")
        answered = threading.Event()
        answers: list[bytes] = []

        def client() -> None:
            request = urllib.request.Request(f"http://127.0.0.1:{port}/", b"hi", method="POST")
            with urllib.request.urlopen(request, timeout=30) as response:
                answers.append(response.read())
            answered.set()

        thread = threading.Thread(target=client)
        thread.start()
        deadline = time.monotonic() + 30
        while not answered.is_set() and time.monotonic() < deadline:
            pass  # the daemon's loop is busy: nothing on it runs meanwhile
        blocked_throughout = answered.is_set()
        await asyncio.to_thread(thread.join)
        assert blocked_throughout, "the listener waited for the daemon's loop"
        assert answers == [b"POST / 2:hi"]


async def test_after_runs_on_the_daemons_loop() -> None:
    ran_on: list[str] = []
    done = asyncio.Event()

    def with_after(_request: HttpRequest) -> HttpResponse:
        def after() -> None:
            ran_on.append(threading.current_thread().name)
            done.set()

        return HttpResponse(200, "text/plain", b"ok", after=after)

    services = DaemonPluginServices(CollectorRegistry())
    services.listen("after", 0, with_after, max_body_bytes=8)
    listeners = ListenerHost("127.0.0.1", services.listeners)
    await listeners.start()
    try:
        async with aiohttp.ClientSession() as session:
            status, _, _ = await call(session, listeners.port("after"), "POST", "/")
        await asyncio.wait_for(done.wait(), 30)
    finally:
        await listeners.stop()
    assert status == 200
    assert ran_on == [threading.current_thread().name]
    assert not [t for t in threading.enumerate() if t.name.startswith("listener:")]


async def test_a_listener_whose_port_is_taken_fails_start_and_leaves_no_thread() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        listener = ListenerThread(
            "busy",
            echo,
            host="127.0.0.1",
            port=taken.getsockname()[1],
            max_body_bytes=8,
            gate=lambda: None,
        )
        with pytest.raises(OSError, match="in use"):
            await listener.start()
        await listener.stop()
    assert not [t for t in threading.enumerate() if t.name == "listener:busy"]


# ------------------------------------------------- the listener's HTTP/1.1
@asynccontextmanager
async def raw_listener(max_body_bytes: int = 8) -> AsyncIterator[int]:
    listener = ListenerThread(
        "raw", echo, host="127.0.0.1", port=0, max_body_bytes=max_body_bytes, gate=lambda: None
    )
    await listener.start()
    try:
        yield listener.port
    finally:
        await listener.stop()


async def exchange(port: int, data: bytes) -> bytes:
    """Send ``data``, then read until the server closes or 2 s of silence."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    received = b""
    with contextlib.suppress(TimeoutError):
        while chunk := await asyncio.wait_for(reader.read(65536), 2):
            received += chunk
    writer.close()
    return received


def post(path: str, body: bytes, *headers: str) -> bytes:
    head = [f"POST {path} HTTP/1.1", "Host: x", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def test_keep_alive_and_pipelined_requests_are_answered_in_order() -> None:
    async with raw_listener() as port:
        answer = await exchange(port, post("/a?x=1", b"one") + post("/b", b"two"))
    assert answer.count(b"HTTP/1.1 200 OK\r\n") == 2
    assert answer.index(b"POST /a 3:one") < answer.index(b"POST /b 3:two")
    assert b"Connection: close" not in answer


async def test_a_body_over_the_limit_is_cut_and_the_rest_skipped() -> None:
    async with raw_listener(max_body_bytes=4) as port:
        answer = await exchange(port, post("/", b"0123456789") + post("/next", b"ok"))
    assert b"POST / 4:0123" in answer
    assert b"POST /next 2:ok" in answer  # the connection stayed in step


async def test_connection_close_and_http10_close_after_the_answer() -> None:
    async with raw_listener() as port:
        closing = await exchange(port, post("/", b"", "Connection: close") + post("/never", b""))
        old = await exchange(port, b"GET /old HTTP/1.0\r\n\r\n")
    assert b"Connection: close" in closing
    assert b"/never" not in closing
    assert b"GET /old 0:" in old


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"NOT A REQUEST\r\n\r\n", b"400"),
        (b"POST / HTTP/2.0\r\n\r\n", b"505"),
        (b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n", b"400"),
        (b"POST / HTTP/1.1\r\n folded\r\n\r\n", b"400"),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", b"411"),
        (b"POST / HTTP/1.1\r\nX: " + b"a" * 9000 + b"\r\n\r\n", b"431"),
        pytest.param(
            b"POST / HTTP/1.1\r\nContent-Length: \xb2\r\n\r\n", b"400", id="unicode-digit-length"
        ),
        pytest.param(
            b"POST / HTTP/1.1\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n",
            b"400",
            id="5000-digit-length",
        ),
        pytest.param(
            b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: \xb2\r\n\r\n",
            b"400",
            id="unicode-digit-repeated-length",
        ),
        pytest.param(b"P\xc9ST / HTTP/1.1\r\n\r\n", b"400", id="non-ascii-method"),
        pytest.param(b"POST / HTTP/1.1\r\nX\x00: y\r\n\r\n", b"400", id="control-in-name"),
        pytest.param(b"POST / HTTP/1.1\r\nX: a\x00b\r\n\r\n", b"400", id="control-in-value"),
    ],
)
async def test_malformed_requests_are_refused_and_the_connection_closed(
    request_bytes: bytes, status: bytes
) -> None:
    async with raw_listener() as port:
        answer = await exchange(port, request_bytes)
    assert answer.startswith(b"HTTP/1.1 " + status)
    assert b"Connection: close" in answer


async def test_a_bad_length_is_refused_per_connection_and_the_listener_keeps_serving() -> None:
    async with raw_listener() as port:
        refused = await exchange(port, b"POST / HTTP/1.1\r\nContent-Length: \xb2\r\n\r\n")
        served = await exchange(port, post("/after", b"ok", "Connection: close"))
    assert refused.startswith(b"HTTP/1.1 400")
    assert b"POST /after 2:ok" in served


async def test_an_unexpected_error_in_a_connection_closes_only_that_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_head = listener_module._Head
    calls = []

    def failing_once(raw: bytes) -> object:
        calls.append(raw)
        if len(calls) == 1:
            raise RuntimeError("unexpected")
        return real_head(raw)

    monkeypatch.setattr(listener_module, "_Head", failing_once)
    async with raw_listener() as port:
        broken = await exchange(port, post("/broken", b""))
        served = await exchange(port, post("/after", b"ok", "Connection: close"))
    assert broken == b""
    assert b"POST /after 2:ok" in served


async def test_a_client_that_never_reads_its_answers_is_not_read_either() -> None:
    """Back-pressure: pipelined requests whose answers are not read stop being
    read, so what the listener holds for the connection stays bounded (it grew
    with what was sent before)."""
    total, bound = 16 << 20, 1 << 20
    listener = ListenerThread(
        "pipelined", echo, host="127.0.0.1", port=0, max_body_bytes=8, gate=lambda: None
    )
    await listener.start()
    try:
        client = socket.create_connection(("127.0.0.1", listener.port))
        client.setblocking(False)
        chunk = post("/p", b"12345678") * 4096
        sent, held, stalled_since = 0, 0, time.monotonic()
        while sent < total and time.monotonic() - stalled_since < 3:
            held = max([held] + [c.buffered_bytes for c in list(listener.connections)])
            if held > bound:
                break
            try:
                sent += client.send(chunk)
                stalled_since = time.monotonic()
            except BlockingIOError:
                await asyncio.sleep(0.01)
        client.close()
    finally:
        await listener.stop()
    assert held <= bound


async def test_connections_beyond_the_cap_are_closed_at_once() -> None:
    listener = ListenerThread(
        "capped",
        echo,
        host="127.0.0.1",
        port=0,
        max_body_bytes=8,
        gate=lambda: None,
        max_connections=2,
    )
    await listener.start()
    try:
        held = [await asyncio.open_connection("127.0.0.1", listener.port) for _ in range(2)]
        for reader, writer in held:  # both accepted and served
            writer.write(post("/held", b""))
            await asyncio.wait_for(reader.readuntil(b"POST /held 0:"), 5)
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
        writer.write(post("/third", b""))
        with contextlib.suppress(ConnectionError):
            refused = await asyncio.wait_for(reader.read(), 10)
            assert refused == b""
        writer.close()
        for _, held_writer in held:
            held_writer.close()
    finally:
        await listener.stop()


async def test_a_request_head_too_slow_to_arrive_is_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(listener_module, "REQUEST_SECONDS", 0.2)
    async with raw_listener() as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST / HTTP/1.1\r\nHost: x\r\n")
        closed = await asyncio.wait_for(reader.read(), 10)  # idle closes only after 75 s
        writer.close()
    assert closed == b""


class _OutOfDescriptors(socket.socket):
    def accept(self) -> tuple[socket.socket, object]:
        raise OSError(errno.EMFILE, "Too many open files")


def test_accept_errors_back_off_and_are_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    server = _OutOfDescriptors(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen()
    pending = socket.create_connection(server.getsockname())  # keeps the server readable
    selector = selectors.DefaultSelector()
    core = HttpCore(
        "emfile", echo, max_body_bytes=8, gate=lambda: None, selector=selector, server=server
    )
    try:
        for _ in range(200):  # the loop, as ListenerThread runs it
            for key, mask in selector.select(0):
                core.dispatch(key, mask)
        warnings = [r for r in caplog.records if "accept failed" in r.getMessage()]
        assert len(warnings) == 1
        core.sweep(time.monotonic() + ACCEPT_BACKOFF_SECONDS)  # accepting again
        assert [key.data for key, _ in selector.select(1)] == [core]
    finally:
        pending.close()
        core.close()
        selector.close()


async def test_expect_100_continue_is_honoured() -> None:
    async with raw_listener() as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        head = b"POST /e HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n"
        writer.write(head)
        interim = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        writer.write(b"hi")
        final = await asyncio.wait_for(reader.readuntil(b"POST /e 2:hi"), 5)
        writer.close()
    assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
    assert final.startswith(b"HTTP/1.1 200 OK")


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    garbage=st.one_of(
        st.binary(max_size=300),
        st.builds(
            lambda line, headers: line + b"\r\n" + headers + b"\r\n\r\n",
            st.binary(max_size=40),
            st.binary(max_size=120),
        ),
    )
)
async def test_garbage_never_breaks_the_listener(garbage: bytes) -> None:
    async with raw_listener() as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(garbage)
        writer.write_eof()
        with contextlib.suppress(ConnectionError):
            answer = await asyncio.wait_for(reader.read(), 5)
            assert answer == b"" or answer.startswith(b"HTTP/1.1 ")
        writer.close()
        assert (await exchange(port, post("/", b"", "Connection: close"))).startswith(
            b"HTTP/1.1 200 OK"
        )


async def test_an_answer_larger_than_the_socket_buffer_is_flushed_whole() -> None:
    big = b"x" * (8 << 20)
    listener = ListenerThread(
        "big",
        lambda request: HttpResponse(200, "text/plain", big),
        host="127.0.0.1",
        port=0,
        max_body_bytes=8,
        gate=lambda: None,
    )
    await listener.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
        writer.write(post("/", b"", "Connection: close"))
        received = await asyncio.wait_for(reader.read(), 30)  # until the server closes
        writer.close()
    finally:
        await listener.stop()
    assert received.endswith(b"\r\n\r\n" + big)


async def test_idle_connections_are_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("scheduler.services.thread.IDLE_SECONDS", 0.05)
    monkeypatch.setattr("scheduler.services.thread.SWEEP_SECONDS", 0.05)
    async with raw_listener() as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(post("/", b"hi"))
        answer = await asyncio.wait_for(reader.read(), 30)  # b"" once closed as idle
        writer.close()
    assert b"POST / 2:hi" in answer


# ------------------------------------------ the switch interval while listening
def test_switch_interval_is_applied_and_restored_even_on_error() -> None:
    before = sys.getswitchinterval()
    with switch_interval(0.00002):
        assert sys.getswitchinterval() == pytest.approx(0.00002)
    assert sys.getswitchinterval() == before
    seen: list[float] = []

    def fail() -> None:
        with switch_interval(0.0003):
            seen.append(sys.getswitchinterval())
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        fail()
    assert seen == [pytest.approx(0.0003)]
    assert sys.getswitchinterval() == before
    with switch_interval(None):  # no listener: left as it is
        assert sys.getswitchinterval() == before


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, LISTENER_SWITCH_INTERVAL),
        ({SWITCH_INTERVAL_ENV: ""}, LISTENER_SWITCH_INTERVAL),
        ({SWITCH_INTERVAL_ENV: "0.00002"}, 0.00002),
        ({SWITCH_INTERVAL_ENV: " 0.005 "}, 0.005),
        ({SWITCH_INTERVAL_ENV: "0"}, None),
        ({SWITCH_INTERVAL_ENV: "-1"}, None),
        ({SWITCH_INTERVAL_ENV: "fast"}, None),
        ({SWITCH_INTERVAL_ENV: "nan"}, None),
        ({SWITCH_INTERVAL_ENV: "inf"}, None),
    ],
)
def test_the_listener_switch_interval_is_configurable(
    environ: dict[str, str], expected: float | None
) -> None:
    if expected is None:
        with pytest.raises(ValueError, match=SWITCH_INTERVAL_ENV):
            listener_switch_interval(environ)
    else:
        assert listener_switch_interval(environ) == expected


async def test_answers_are_delivered_when_the_client_shuts_its_side_first() -> None:
    async with raw_listener() as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(post("/a", b"one") + post("/b", b"two"))
        writer.write_eof()
        answer = await asyncio.wait_for(reader.read(), 30)  # until the server closes
        writer.close()
    assert answer.count(b"HTTP/1.1 200 OK\r\n") == 2


class _Timeline:
    """An injected clock for ``HttpCore``: moves only when the test says."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _turn(selector: selectors.BaseSelector, core: HttpCore) -> None:
    """One loop turn, as the listener thread and the agent process run it."""
    core.new_turn()
    for key, mask in selector.select(0.02):
        core.dispatch(key, mask)


def _counting_core(
    limits: ListenerLimits | None = None, clock: _Timeline | None = None
) -> tuple[HttpCore, selectors.BaseSelector, dict[str, int]]:
    handled: dict[str, int] = {}

    def count(request: HttpRequest) -> HttpResponse:
        handled[request.path] = handled.get(request.path, 0) + 1
        return HttpResponse(200, "text/plain", b"ok")

    server = socket.create_server(("127.0.0.1", 0))
    selector = selectors.DefaultSelector()
    core = HttpCore(
        "core",
        count,
        max_body_bytes=8,
        gate=lambda: None,
        selector=selector,
        server=server,
        limits=limits,
        clock=clock or time.monotonic,
    )
    return core, selector, handled


def test_a_pipelining_client_is_answered_a_budget_per_turn_and_others_go_first() -> None:
    core, selector, handled = _counting_core(ListenerLimits(requests_per_turn=16))
    port = core._server.getsockname()[1]
    batch = b"".join(post("/pipelined", b"") for _ in range(100))
    pipeliner = socket.create_connection(("127.0.0.1", port))
    other = socket.create_connection(("127.0.0.1", port))
    try:
        _turn(selector, core)  # accepts both
        _turn(selector, core)
        pipeliner.sendall(batch)
        for _ in range(50):  # until the batch is read
            _turn(selector, core)
            if handled.get("/pipelined"):
                break
        assert handled["/pipelined"] == 16  # before: all 100 in one turn
        other.sendall(post("/other", b""))
        for _ in range(50):
            _turn(selector, core)
            if handled.get("/other"):
                break
        assert handled["/other"] == 1
        assert handled["/pipelined"] <= 16 * 3  # it waited its turns meanwhile
        for _ in range(50):
            _turn(selector, core)
        assert handled["/pipelined"] == 100  # nothing lost
    finally:
        pipeliner.close()
        other.close()
        core.close()
        selector.close()


def test_a_client_trickling_one_byte_at_a_time_cannot_keep_a_request_head_open() -> None:
    clock = _Timeline()
    core, selector, handled = _counting_core(ListenerLimits(request_seconds=30.0), clock)
    port = core._server.getsockname()[1]
    trickler = socket.create_connection(("127.0.0.1", port))
    head = b"POST / HTTP/1.1\r\n" + b"X-Slow: " + b"a" * 200
    try:
        _turn(selector, core)  # accepted
        closed_at = None
        for byte in head:  # one byte a second, each one resetting nothing
            trickler.send(bytes([byte]))
            _turn(selector, core)
            clock.now += 1.0
            core.sweep(clock.now)
            if not core.connections:
                closed_at = clock.now
                break
        assert closed_at is not None
        assert closed_at - 1000.0 <= 32.0  # the 30 s from its first byte, swept each second
        assert handled == {}
    finally:
        trickler.close()
        core.close()
        selector.close()
