"""Process listeners (``scheduler.listenerprocess``): a plugin endpoint served
by a child process, over a real socket and a real child. Messages keep their
order both ways, a call sees every message sent before it and delivers what
the child sent before answering, the gate is followed, failures are reported
(a failing factory, a call that raises, a child that dies) and the inline
mode used without an ops server behaves the same."""

from __future__ import annotations

import asyncio
import http.client
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from scheduler.framework import ChannelError, HttpRequest
from scheduler.listenerprocess import Frames, ProcessListener, encode
from tests.support.echo_endpoint import CRASH, FAIL, SLOW

ECHO = "tests.support.echo_endpoint:build"


def post(port: int, path: str, body: bytes) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("POST", path, body)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def new_listener(factory: str = ECHO) -> tuple[ProcessListener, list[object]]:
    seen: list[object] = []
    listener = ProcessListener("echo", 0, factory, seen.append, max_body_bytes=64, leader_only=True)
    return listener, seen


@asynccontextmanager
async def started(factory: str = ECHO) -> AsyncIterator[tuple[ProcessListener, list[object]]]:
    listener, seen = new_listener(factory)
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
