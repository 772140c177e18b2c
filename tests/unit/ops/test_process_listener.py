"""Process listeners (``scheduler.services.process``): a plugin endpoint served
by a child process, over a real socket and a real child. Messages keep their
order both ways, a call sees every message sent before it and delivers what
the child sent before answering, the gate is followed, failures are reported
(a failing factory, a call that raises, a child that dies) and the inline
mode used without an ops server behaves the same."""

from __future__ import annotations

import asyncio
import http.client
import os
import signal
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from scheduler.framework import ChannelError, HttpRequest, ListenerLimits
from scheduler.services.process import (
    LEADERSHIP_UNCONFIRMED,
    ChildGate,
    Frames,
    ProcessListener,
    encode,
)
from tests.support.echo_endpoint import COUNT, CRASH, FAIL, HANG, SLOW

ECHO = "tests.support.echo_endpoint:build"


def post(port: int, path: str, body: bytes) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("POST", path, body)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def new_listener(
    factory: str = ECHO, limits: ListenerLimits | None = None
) -> tuple[ProcessListener, list[object]]:
    seen: list[object] = []
    listener = ProcessListener(
        "echo", 0, factory, seen.append, max_body_bytes=64, leader_only=True, limits=limits
    )
    return listener, seen


@asynccontextmanager
async def started(
    factory: str = ECHO, limits: ListenerLimits | None = None
) -> AsyncIterator[tuple[ProcessListener, list[object]]]:
    listener, seen = new_listener(factory, limits)
    await listener.start("127.0.0.1")
    try:
        yield listener, seen
    finally:
        await listener.stop()


@pytest.mark.parametrize(
    "messages",
    [
        pytest.param([], id="nothing"),
        pytest.param([("a", 1), {"b": [2, 3]}, "c" * 100_000], id="mixed, one large"),
    ],
)
def test_frames_split_a_stream_cut_anywhere(messages: list[object]) -> None:
    stream = b"".join(encode(message) for message in messages)
    for cut in (1, 3, 4096):
        frames = Frames()
        got: list[object] = []
        for start in range(0, len(stream), cut):
            got += frames.feed(stream[start : start + cut])
        assert got == messages


async def test_a_call_answers_after_every_message_sent_before_it() -> None:
    async with started() as (listener, seen):
        for number in range(50):
            listener.send(("event", number))
        answer = listener.call("last", timeout=30)
        assert answer == ("answer", "last", 51)
        # What the child sent before answering is delivered before the call returns.
        assert seen == [("got", ("event", n)) for n in range(50)] + [("got", "last")]


async def test_http_is_refused_until_the_gate_opens_then_served_by_the_child() -> None:
    async with started() as (listener, _seen):
        status, body = await asyncio.to_thread(post, listener.port, "/", b"x")
        assert status == 503
        assert body.startswith(b"not ready")
        listener.update_gate(None)
        listener.call("sync", timeout=30)  # the gate went out before this call
        status, body = await asyncio.to_thread(post, listener.port, "/path", b"hello")
        assert (status, body) == (200, b"POST /path hello after 1")
        status, _ = await asyncio.to_thread(post, listener.port, "/boom", b"")
        assert status == 500
        listener.update_gate("not the leader")
        listener.call("sync", timeout=30)
        status, body = await asyncio.to_thread(post, listener.port, "/", b"x")
        assert (status, body) == (503, b"not the leader")


async def test_messages_the_child_sends_between_calls_reach_on_message() -> None:
    async with started() as (listener, seen):
        listener.update_gate(None)
        await asyncio.to_thread(post, listener.port, "/", b"one")
        listener.call("sync", timeout=30)
        assert ("http", "POST", b"one") in seen


async def test_a_call_the_child_fails_raises_and_the_channel_goes_on() -> None:
    async with started() as (listener, _seen):
        with pytest.raises(ChannelError, match="asked to fail"):
            listener.call(FAIL, timeout=30)
        assert listener.call("after", timeout=30) == ("answer", "after", 1)


async def test_a_call_not_answered_in_time_raises_and_its_late_answer_is_dropped() -> None:
    async with started() as (listener, _seen):
        with pytest.raises(ChannelError, match="no answer from its process"):
            listener.call(SLOW, timeout=0.2)
        # The late answer to SLOW arrives first; this call gets its own.
        assert listener.call("next", timeout=30) == ("answer", "next", 2)


async def test_a_child_that_dies_is_reported_and_calls_fail() -> None:
    async with started() as (listener, _seen):
        listener.send(CRASH)
        reason = await asyncio.wait_for(listener.wait_lost(), 30)
        assert "closed the channel" in reason
        with pytest.raises(ChannelError):
            listener.call("anything", timeout=30)


async def test_a_factory_that_fails_fails_start_with_its_traceback() -> None:
    listener, _ = new_listener("tests.support.echo_endpoint:broken")
    with pytest.raises(RuntimeError, match="cannot build"):
        await listener.start("127.0.0.1")
    await listener.stop()


async def test_stop_ends_the_child() -> None:
    async with started() as (listener, _seen):
        pid = listener.pid
        assert pid is not None
    assert listener._process is not None
    assert listener._process.returncode == 0


def test_without_a_server_the_endpoint_runs_inline_with_the_same_order() -> None:
    listener, seen = new_listener()
    listener.send("early")  # before anyone served it: kept
    assert listener.call("first", timeout=1) == ("answer", "first", 2)
    assert seen == [("got", "early"), ("got", "first")]
    response = listener.handle_inline(HttpRequest("POST", "/p", b"b"))
    assert response.body == b"POST /p b after 2"
    assert seen[-1] == ("http", "POST", b"b")
    with pytest.raises(ChannelError, match="asked to fail"):
        listener.call(FAIL, timeout=1)


async def test_the_child_runs_at_the_nice_value_asked_for() -> None:
    seen: list[object] = []
    listener = ProcessListener(
        "echo", 0, ECHO, seen.append, max_body_bytes=64, leader_only=True, nice=5
    )
    await listener.start("127.0.0.1")
    try:
        listener.call("sync", timeout=30)  # booted, so reniced
        pid = listener.pid
        assert pid is not None
        assert os.getpriority(os.PRIO_PROCESS, pid) == 5
    finally:
        await listener.stop()


async def test_ask_answers_without_blocking_the_daemons_loop() -> None:
    async with started() as (listener, _seen):
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        ticker = asyncio.create_task(tick())
        try:
            answer = listener.ask(SLOW, timeout=30)  # the child takes 2 s
            assert not answer.done()
            before = ticks
            assert await asyncio.wait_for(answer, 30) == ("answer", SLOW, 1)
            assert ticks > before  # the loop ran while the child worked
        finally:
            ticker.cancel()


async def test_an_ask_not_answered_within_its_budget_fails_and_the_channel_goes_on() -> None:
    async with started() as (listener, _seen):
        with pytest.raises(ChannelError, match=r"no answer from its process in 0\.2s"):
            await listener.ask(SLOW, timeout=0.2)
        assert await listener.ask("next", timeout=30) == ("answer", "next", 2)


def pipelined(count: int) -> bytes:
    return b"POST /p HTTP/1.1\r\nContent-Length: 1\r\n\r\nx" * count


async def test_the_child_answers_the_daemon_before_the_rest_of_a_pipelined_batch() -> None:
    batch = 1000  # 46 KB: one read of the child's
    async with started() as (listener, _seen):
        listener.update_gate(None)
        assert await listener.ask("sync", timeout=30) is not None
        client = socket.create_connection(("127.0.0.1", listener.port))
        try:
            client.sendall(pipelined(batch))
            first = await asyncio.to_thread(client.recv, 1)  # the child is on the batch
            assert first == b"H"
            handled = await listener.ask(COUNT, timeout=30)
            assert isinstance(handled, int)
            assert handled < batch  # answered between two turns, not after the batch
        finally:
            client.close()


async def test_a_hung_child_is_killed_by_the_heartbeat_and_restarted_on_the_same_port() -> None:
    limits = ListenerLimits(liveness_seconds=2.5)
    async with started(limits=limits) as (listener, _seen):
        listener.update_gate(None)
        port, pid = listener.port, listener.pid
        assert pid is not None
        assert await listener.ask("before", timeout=30) == ("answer", "before", 1)
        os.kill(pid, signal.SIGSTOP)
        reason = await asyncio.wait_for(listener.wait_lost(), 30)
        assert "no heartbeat answer in 2.5s: killed" in reason
        await listener.restart()
        assert listener.pid != pid
        assert listener.port == port
        listener.update_gate(None)
        # A fresh endpoint: what the old one received is gone (the plugin resends).
        assert await listener.ask("after", timeout=30) == ("answer", "after", 1)
        status, body = await asyncio.to_thread(post, port, "/p", b"again")
        assert (status, body) == (200, b"POST /p again after 1")


async def test_a_deadlocked_endpoint_is_killed_by_the_heartbeat() -> None:
    async with started(limits=ListenerLimits(liveness_seconds=2.5)) as (listener, _seen):
        listener.send(HANG)
        reason = await asyncio.wait_for(listener.wait_lost(), 30)
        assert "no heartbeat answer" in reason
        with pytest.raises(ChannelError):
            await listener.ask("anything", timeout=30)


async def test_asks_in_flight_fail_when_the_child_dies() -> None:
    async with started() as (listener, _seen):
        pending = listener.ask(SLOW, timeout=30)
        pid = listener.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(ChannelError):
            await asyncio.wait_for(pending, 30)


@pytest.mark.parametrize(
    ("reason", "until", "now", "refusal"),
    [
        pytest.param(None, None, 1e9, None, id="no expiry: serves"),
        pytest.param(None, 100.0, 99.9, None, id="before the expiry: serves"),
        pytest.param(None, 100.0, 100.0, LEADERSHIP_UNCONFIRMED, id="at the expiry: refuses"),
        pytest.param("not the leader", None, 0.0, "not the leader", id="a refusal stays"),
    ],
)
def test_the_child_gate_expires_unless_renewed(
    reason: str | None, until: float | None, now: float, refusal: str | None
) -> None:
    gate = ChildGate()
    gate.update(reason, until)
    assert gate.refusal(now) == refusal


async def test_a_child_whose_daemon_stops_renewing_the_gate_stops_serving() -> None:
    async with started() as (listener, _seen):
        listener.update_gate(None, until=time.monotonic() + 600)
        await listener.ask("sync", timeout=30)
        assert (await asyncio.to_thread(post, listener.port, "/", b"x"))[0] == 200
        listener.update_gate(None, until=time.monotonic() + 0.3)  # then the daemon stalls
        await listener.ask("sync", timeout=30)
        deadline = time.monotonic() + 30
        while True:
            status, body = await asyncio.to_thread(post, listener.port, "/", b"x")
            if status != 200 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.05)
        assert (status, body) == (503, LEADERSHIP_UNCONFIRMED.encode())
