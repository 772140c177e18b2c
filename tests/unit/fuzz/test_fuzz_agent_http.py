"""Fuzzing the agent port's HTTP/1.1 (``scheduler.services.thread.HttpCore``, the
loop both plugin listeners and the agent child process run): request lines,
headers, ``Content-Length`` values (Unicode digits, huge, negative, repeated),
pipelined requests and bodies, all cut into arbitrary reads, sent over a real
loopback socket. Properties: nothing is raised out of ``dispatch`` and no
error is logged (an error contained to its connection is still a bug here),
every answer is a well-formed HTTP/1.1 response with an expected status, and
afterwards the listener holds no connection and serves a well-formed request.
"""

from __future__ import annotations

import logging
import re
import selectors
import socket
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scheduler.framework import HttpRequest, HttpResponse
from scheduler.services.thread import HttpCore, bind
from tests.unit.fuzz.strategies import examples

FUZZ = settings(
    max_examples=examples(100),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
ANSWERS = {100, 200, 400, 411, 431, 505}
_STATUS = re.compile(rb"HTTP/1\.1 (\d{3}) [^\r\n]*\r\n")


def echo(request: HttpRequest) -> HttpResponse:
    return HttpResponse(
        200, "text/plain", f"{request.method} {request.path} {len(request.body)}".encode()
    )


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@dataclass(frozen=True)
class Served:
    core: HttpCore
    selector: selectors.BaseSelector
    errors: _Errors
    address: tuple[str, int]


@contextmanager
def serving() -> Iterator[Served]:
    selector = selectors.DefaultSelector()
    server = bind("127.0.0.1", 0)
    core = HttpCore(
        "fuzz",
        echo,
        max_body_bytes=16,
        gate=lambda: None,
        selector=selector,
        server=server,
    )
    errors = _Errors()
    logger = logging.getLogger("scheduler.services.thread")
    logger.addHandler(errors)
    try:
        yield Served(core, selector, errors, server.getsockname()[:2])
    finally:
        logger.removeHandler(errors)
        core.close()
        selector.close()


def pump(core: HttpCore, selector: selectors.BaseSelector) -> None:
    """Run the loop until nothing is ready (the loop's turns, in this thread)."""
    for _ in range(10_000):
        ready = selector.select(0)
        if not ready:
            return
        for key, mask in ready:
            assert core.dispatch(key, mask)


def drain(client: socket.socket) -> tuple[bytes, bool]:
    received = b""
    while True:
        try:
            chunk = client.recv(65536)
        except BlockingIOError:
            return received, False
        except ConnectionResetError:
            return received, True
        if not chunk:
            return received, True
        received += chunk


def converse(served: Served, pieces: list[bytes]) -> bytes:
    """Send ``pieces`` one read at a time, then shut the write side; the answers."""
    core, selector = served.core, served.selector
    client = socket.create_connection(served.address)
    client.setblocking(False)
    received = b""
    try:
        pump(core, selector)
        for piece in pieces:
            try:
                client.sendall(piece)
            except (BlockingIOError, BrokenPipeError, ConnectionResetError):
                break  # the server closed on a refusal
            pump(core, selector)
            chunk, _ = drain(client)
            received += chunk
        with suppress(OSError):
            client.shutdown(socket.SHUT_WR)
        for _ in range(100):
            pump(core, selector)
            chunk, done = drain(client)
            received += chunk
            if done:
                break
    finally:
        client.close()
    pump(core, selector)
    return received


def responses(stream: bytes) -> list[int]:
    """The statuses of a stream of well-formed responses; asserts the framing."""
    statuses = []
    while stream:
        match = _STATUS.match(stream)
        assert match, stream[:80]
        end = stream.index(b"\r\n\r\n") + 4
        head = stream[:end]
        length = re.search(rb"\r\nContent-Length: (\d+)\r\n", head)
        body = int(length.group(1)) if length else 0
        assert len(stream) >= end + body, "truncated answer"
        statuses.append(int(match.group(1)))
        stream = stream[end + body :]
    return statuses


_digits = st.sampled_from(["0", "5", "16", "²", "١٢", "٣", "-1", "+3", " 4", "0x10", "", "1e3"])
lengths = st.one_of(
    _digits,
    st.integers(min_value=0, max_value=10**30).map(str),
    st.integers(min_value=17, max_value=6000).map(lambda n: "9" * n),
    st.text(alphabet=st.characters(categories=["Nd", "No"]), min_size=1, max_size=4),
)
tokens = st.one_of(
    st.sampled_from(["GET", "POST", "PUT", "DELETE", "M-SEARCH", "POST ", "PÖST", "", "G\x00T"]),
    st.text(max_size=8),
)
header_names = st.one_of(
    st.sampled_from(["Host", "Connection", "Expect", "Transfer-Encoding", "X-A", " X", "X "]),
    st.text(max_size=10),
)
header_values = st.one_of(
    st.sampled_from(["close", "keep-alive", "100-continue", "chunked", "x"]),
    st.text(max_size=20),
)


@st.composite
def requests(draw: st.DrawFn) -> bytes:
    method = draw(tokens)
    target = draw(
        st.one_of(st.sampled_from(["/", "/a?b=c", "", "/\x7f", "/é"]), st.text(max_size=12))
    )
    version = draw(st.sampled_from(["HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTX/1.1", "http/1.1"]))
    body = draw(st.binary(max_size=40))
    headers = draw(st.lists(st.tuples(header_names, header_values), max_size=4))
    for length in draw(st.lists(st.one_of(st.just(str(len(body))), lengths), max_size=2)):
        headers.append(("Content-Length", length))
    head = f"{method} {target} {version}\r\n" + "".join(f"{n}: {v}\r\n" for n, v in headers)
    encoding = draw(st.sampled_from(["utf-8", "latin-1"]))
    return head.encode(encoding, "replace") + b"\r\n" + body


@st.composite
def conversations(draw: st.DrawFn) -> list[bytes]:
    """Pipelined requests (or raw bytes), cut at arbitrary points into reads."""
    parts = draw(st.lists(st.one_of(requests(), st.binary(max_size=60)), min_size=1, max_size=5))
    stream = b"".join(parts)
    cuts = sorted(draw(st.lists(st.integers(0, len(stream)), max_size=6)))
    pieces, start = [], 0
    for cut in [*cuts, len(stream)]:
        if cut > start:
            pieces.append(stream[start:cut])
            start = cut
    return pieces


WELL_FORMED = b"POST /ok HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi"


@FUZZ
@given(conversations())
@example([b"POST / HTTP/1.1\r\nContent-Length: \xb2\r\n\r\n"])
@example([b"POST / HTTP/1.1\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n"])
@example([b"POST / HTTP/1.1\r\nContent-Length: \xd9\xa1\r\n\r\n"])
@example([b"GET / HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n", b"\r\n\r\n"])
def test_any_request_stream_is_answered_or_refused_and_never_breaks_the_listener(
    pieces: list[bytes],
) -> None:
    with serving() as served:
        answers = responses(converse(served, pieces))
        assert set(answers) <= ANSWERS
        assert not served.errors.records
        assert not served.core.connections
        assert responses(converse(served, [WELL_FORMED])) == [200]
