"""Fuzzing the ops port's HTTP handling against a real server on loopback
(fake authentication seam): any request lines, headers, lengths and
pipelined requests are answered with a valid HTTP/1.x status line that is not
5xx (but 505 for a request line of another version, as Go's net/http), or
the connection is closed; the server keeps answering a well-formed request."""

from __future__ import annotations

import asyncio
import re

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from scheduler.ops.connlimits import Limits
from scheduler.ops.delegation import Decision
from scheduler.ops.diagnostics import AttemptLog
from scheduler.ops.health import HealthChecks
from scheduler.ops.server import OpsServer
from tests.unit.fuzz.strategies import examples

FUZZ = settings(
    max_examples=examples(30),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
DEADLINE = 10.0
STATUS_LINE = re.compile(rb"HTTP/1\.[01] ([1-5]\d\d) ")
LIVEZ = b"GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
IDLE = 0.5  # no more bytes for this long: the answers are all in


class FakeGuard:
    """Allows a bearer ``good``, refuses anything else (401 or 403)."""

    async def check(self, authorization: str | None, path: str, method: str) -> Decision:
        if path in ("/livez", "/readyz", "/healthz"):
            return Decision(200)
        if authorization is None:
            return Decision(403, "forbidden")
        return Decision(200) if authorization == "Bearer good" else Decision(401, "no")


methods = st.sampled_from([b"GET", b"POST", b"HEAD", b"PUT", b"G\x00T", b"", b"get"])
paths = st.one_of(
    st.sampled_from([b"/livez", b"/metrics", b"/configz", b"/debug/pods/a/b", b"*", b"/%zz"]),
    st.binary(max_size=40),
)
versions = st.sampled_from([b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2.0", b"HTTP/1.x", b""])
header_values = st.one_of(
    st.sampled_from([b"5", b"\xc2\xb2", b"9" * 5000, b"-1", b"Bearer good", b"chunked"]),
    st.binary(max_size=30),
)
header_names = st.sampled_from(
    [b"Content-Length", b"Transfer-Encoding", b"Authorization", b"Host", b"X-A", b"", b"Bad Name"]
)
headers = st.lists(st.tuples(header_names, header_values), max_size=5)
requests = st.builds(
    lambda m, p, v, hs, body: (
        m
        + b" "
        + p
        + b" "
        + v
        + b"\r\n"
        + b"".join(n + b": " + val + b"\r\n" for n, val in hs)
        + b"\r\n"
        + body
    ),
    methods,
    paths,
    versions,
    headers,
    st.binary(max_size=20),
)


async def _exchange(server: OpsServer, data: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.bound_port)
    try:
        writer.write(data)
        await writer.drain()
        answer = b""
        while True:
            try:
                chunk = await asyncio.wait_for(reader.read(65536), IDLE)
            except TimeoutError:
                return answer
            if not chunk:
                return answer
            answer += chunk
    except ConnectionError:
        return b""
    finally:
        writer.close()


async def _round(data: bytes) -> tuple[bytes, bytes]:
    server = OpsServer(
        "127.0.0.1",
        0,
        CollectorRegistry(),
        HealthChecks(),
        AttemptLog(),
        guard=FakeGuard(),
        limits=Limits(header_timeout=IDLE),
    )
    await server.start()
    try:
        answer = await _exchange(server, data)
        after = await _exchange(server, LIVEZ)
    finally:
        await server.stop()
    return answer, after


@FUZZ
@given(st.lists(requests, min_size=1, max_size=3).map(b"".join))
@example(b"GET /metrics HTTP/1.1\r\nContent-Length: \xc2\xb2\r\n\r\n")
@example(b"GET /metrics HTTP/1.1\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n")
@example(LIVEZ * 3)
@example(b"GET /livez HTTP/2.0\r\n\r\n")  # was answered "HTTP/2.0 200 OK" (20x fuzz run)
def test_any_request_bytes_get_a_non_5xx_answer_or_a_close(data: bytes) -> None:
    answer, after = asyncio.run(_round(data))
    for status in STATUS_LINE.findall(answer):
        assert status == b"505" or not status.startswith(b"5"), answer[:300]
    if answer:
        assert STATUS_LINE.match(answer), answer[:300]
    assert after.startswith(b"HTTP/1.1 200"), after[:300]
