"""Fuzzing answers decided later (``PendingAnswer``, the agent port with
authentication on): pipelined requests, any of which the handler leaves
pending and the test resolves at an arbitrary later turn, their bytes cut
into arbitrary writes. Property: every request is answered exactly once and
the answers come back in request order, each with its own request's
``Authorization`` header seen by the handler."""

from __future__ import annotations

import contextlib
import itertools
import selectors
import socket

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.framework import HttpRequest, HttpResponse, PendingAnswer
from scheduler.services.thread import HttpCore
from tests.unit.fuzz.strategies import examples

FUZZ = settings(
    max_examples=examples(50),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@st.composite
def plans(draw: st.DrawFn) -> tuple[list[bool], list[int], list[int]]:
    """(which requests wait, cut points of the byte stream, turns at which
    the oldest pending answer is resolved)."""
    count = draw(st.integers(min_value=1, max_value=12))
    waits = draw(st.lists(st.booleans(), min_size=count, max_size=count))
    cuts = draw(st.lists(st.integers(min_value=0, max_value=4000), max_size=6))
    resolve_at = draw(st.lists(st.integers(min_value=0, max_value=30), max_size=count))
    return waits, sorted(cuts), resolve_at


@FUZZ
@given(plans())
def test_pending_answers_keep_every_answer_once_and_in_order(
    plan: tuple[list[bool], list[int], list[int]],
) -> None:
    waits, cuts, resolve_at = plan
    pending: list[tuple[PendingAnswer, str]] = []
    seen: list[tuple[str, str]] = []

    def handler(request: HttpRequest) -> HttpResponse | PendingAnswer:
        seen.append((request.path, request.authorization))
        body = f"answer {request.path}".encode()
        if waits[int(request.path[2:])]:
            answer = PendingAnswer()
            pending.append((answer, request.path))
            return answer
        return HttpResponse(200, "text/plain", body)

    stream = b"".join(
        f"POST /p{i} HTTP/1.1\r\nAuthorization: Bearer t{i}\r\nContent-Length: 0\r\n\r\n".encode()
        for i in range(len(waits))
    )
    bounds = [0, *(c for c in cuts if c < len(stream)), len(stream)]
    pieces = [stream[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    server = socket.create_server(("127.0.0.1", 0))
    selector = selectors.DefaultSelector()
    core = HttpCore(
        "fuzz", handler, max_body_bytes=8, gate=lambda: None, selector=selector, server=server
    )
    client = socket.create_connection(server.getsockname())
    client.setblocking(False)
    received = b""
    try:
        for turn in range(60 + 2 * len(waits)):
            if pieces:
                client.sendall(pieces.pop(0))
            core.new_turn()
            for key, mask in selector.select(0.001):
                core.dispatch(key, mask)
            if pending and (turn in resolve_at or turn >= 40):
                answer, path = pending.pop(0)
                answer.resolve(HttpResponse(401, "text/plain", f"answer {path}".encode()))
            with contextlib.suppress(BlockingIOError):
                received += client.recv(1 << 20)
            if received.count(b"HTTP/1.1 ") == len(waits) and not pieces and not pending:
                break
    finally:
        client.close()
        core.close()
        selector.close()
    bodies = [part.split(b"\r\n\r\n", 1)[-1] for part in received.split(b"HTTP/1.1 ")[1:]]
    assert bodies == [f"answer /p{i}".encode() for i in range(len(waits))], received
    assert seen == [(f"/p{i}", f"Bearer t{i}") for i in range(len(waits))]
