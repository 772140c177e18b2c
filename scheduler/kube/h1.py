"""``WriteLane``: persistent HTTP/1.1 connections for the per-pod writes.

Every bound pod costs two POSTs whose answer is not needed (the binding and
its Scheduled event, protobuf bodies); through aiohttp each spent ~0.1 ms of
the loop's CPU in request and response machinery (headers as multidicts, URL
objects, tracing hooks, stream readers), about a tenth of a pod's whole cost
at 5000 nodes. The lane writes the request as one bytes object and parses the
answer with a small state machine on an ``asyncio.Protocol``: a status line,
headers, then a body of ``Content-Length`` bytes or chunks.

Contract (the same as ``KubeClient``'s for these calls):
- ``post`` returns the status and the body of the answer, or raises
  ``TransportError`` when no whole answer came (connection refused, reset or
  closed early, a malformed answer, the timeout); nothing is retried here.
- One request at a time per connection (no pipelining); at most
  ``max_connections`` open at once, more requests wait for one.
- A connection is reused only after a whole answer that allows it (HTTP/1.1
  without ``Connection: close``, nothing left over), and only while it has
  been idle less than ``idle_timeout`` (the server may close idle ones; a
  POST is not replayed on a stale one, so the lane drops them first).
- A request cancelled or timed out while in flight closes its connection:
  its answer could still arrive on it.
- ``close()`` aborts every connection and returns once each is gone.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from dataclasses import dataclass

from scheduler.framework.clock import Clock
from scheduler.kube.errors import TransportError

# An answer's headers larger than this, or a body larger than
# ``MAX_BODY``, is not a Kubernetes answer to a POST: the connection is dropped.
MAX_HEADER_BYTES = 64 * 1024
MAX_BODY = 4 * 1024 * 1024
_NO_BODY_STATUSES = frozenset({204, 304})


class _Malformed(Exception):
    pass


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes


class _Parser:
    """One HTTP/1.1 answer, fed bytes as they arrive. ``feed`` returns True
    once the answer is whole; ``leftover`` is what came after it."""

    __slots__ = ("_buffer", "_chunked", "_length", "_stage", "body", "keep_alive", "status")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._stage = 0  # 0 head, 1 fixed body, 2 chunked body, 3 until close, 4 done
        self._length = 0
        self._chunked = bytearray()
        self.status = 0
        self.keep_alive = False
        self.body = b""

    @property
    def leftover(self) -> bool:
        return bool(self._buffer)

    def feed(self, data: bytes) -> bool:
        self._buffer += data
        if self._stage == 0 and not self._head():
            return False
        if self._stage == 1:
            return self._fixed()
        if self._stage == 2:
            return self._chunks()
        if self._stage == 3:
            if len(self._buffer) > MAX_BODY:
                raise _Malformed("answer body too large")
            return False
        return self._stage == 4

    def at_close(self) -> bool:
        """The peer closed: True when that ends the answer (no length given)."""
        if self._stage != 3:
            return False
        self.body = bytes(self._buffer)
        self._buffer.clear()
        self._stage = 4
        return True

    def _head(self) -> bool:
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buffer) > MAX_HEADER_BYTES:
                raise _Malformed("answer headers too large")
            return False
        lines = bytes(self._buffer[:end]).split(b"\r\n")
        del self._buffer[: end + 4]
        version, _, rest = lines[0].partition(b" ")
        code = rest[:3]
        if not version.startswith(b"HTTP/1.") or not code.isdigit():
            raise _Malformed(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
        self.status = int(code)
        keep_alive = version == b"HTTP/1.1"
        length: int | None = None
        chunked = False
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            value = value.strip().lower()
            if name == b"content-length":
                if not value.isdigit():
                    raise _Malformed(f"bad Content-Length {value[:40]!r}")
                length = int(value)
            elif name == b"transfer-encoding":
                chunked = value.endswith(b"chunked")
            elif name == b"connection":
                if b"close" in value:
                    keep_alive = False
                elif b"keep-alive" in value:
                    keep_alive = True
        self.keep_alive = keep_alive
        if 100 <= self.status < 200:
            raise _Malformed(f"unexpected interim answer {self.status}")
        if self.status in _NO_BODY_STATUSES:
            self._stage = 4
        elif chunked:
            self._stage = 2
        elif length is not None:
            if length > MAX_BODY:
                raise _Malformed("answer body too large")
            self._length = length
            self._stage = 1
        else:
            self.keep_alive = False
            self._stage = 3
        return True

    def _fixed(self) -> bool:
        if len(self._buffer) < self._length:
            return False
        self.body = bytes(self._buffer[: self._length])
        del self._buffer[: self._length]
        self._stage = 4
        return True

    def _chunks(self) -> bool:
        buffer = self._buffer
        while True:
            line_end = buffer.find(b"\r\n")
            if line_end < 0:
                if len(buffer) > MAX_HEADER_BYTES:
                    raise _Malformed("chunk size line too long")
                return False
            size_text = bytes(buffer[:line_end]).split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise _Malformed(f"bad chunk size {size_text[:40]!r}") from None
            if size == 0:
                trailer_end = buffer.find(b"\r\n\r\n", line_end)
                if trailer_end < 0:  # the last chunk's trailers are not all here
                    return False
                del buffer[: trailer_end + 4]
                self.body = bytes(self._chunked)
                self._stage = 4
                return True
            if len(self._chunked) + size > MAX_BODY:
                raise _Malformed("answer body too large")
            data_end = line_end + 2 + size
            if len(buffer) < data_end + 2:
                return False
            if buffer[data_end : data_end + 2] != b"\r\n":
                raise _Malformed("chunk not followed by CRLF")
            self._chunked += buffer[line_end + 2 : data_end]
            del buffer[: data_end + 2]


class _Connection(asyncio.Protocol):
    """One connection; ``exchange`` sends a request and waits for its answer."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.idle_since = 0.0
        self._parser: _Parser | None = None
        self._answer: asyncio.Future[Answer] | None = None
        self.reusable = True

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        parser, answer = self._parser, self._answer
        if parser is None or answer is None or answer.done():
            self.reusable = False  # bytes nobody asked for
            self._abort()
            return
        try:
            whole = parser.feed(data)
        except _Malformed as err:
            self._fail(TransportError(f"malformed answer: {err}"))
            return
        if whole:
            self._finish(parser)

    def eof_received(self) -> bool | None:
        self.reusable = False
        parser = self._parser
        if parser is not None and parser.at_close():
            self._finish(parser)
        return None  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.reusable = False
        parser = self._parser
        if parser is not None and parser.at_close():
            self._finish(parser)
        self._fail(TransportError(f"connection closed before a whole answer: {exc!r}"))
        if not self.lost.done():
            self.lost.set_result(None)

    async def exchange(self, request: bytes) -> Answer:
        transport = self.transport
        if transport is None or transport.is_closing():
            raise TransportError("connection closed")
        self._parser = _Parser()
        answer: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._answer = answer
        transport.write(request)
        try:
            return await answer
        finally:
            self._parser = None
            self._answer = None

    def alive(self) -> bool:
        transport = self.transport
        return self.reusable and transport is not None and not transport.is_closing()

    def close(self) -> None:
        self.reusable = False
        self._abort()

    def _finish(self, parser: _Parser) -> None:
        if not parser.keep_alive or parser.leftover:
            self.reusable = False
        answer = self._answer
        if answer is not None and not answer.done():
            answer.set_result(Answer(parser.status, parser.body))
        self._parser = None
        if not self.reusable:
            self._abort()

    def _fail(self, error: TransportError) -> None:
        self.reusable = False
        answer = self._answer
        if answer is not None and not answer.done():
            answer.set_exception(error)
        self._abort()

    def _abort(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.abort()


class WriteLane:
    """A bounded pool of HTTP/1.1 connections to one server."""

    def __init__(
        self,
        *,
        host: str,
        port: int,
        authority: str,
        ssl_context: ssl.SSLContext | None,
        server_hostname: str | None,
        max_connections: int,
        idle_timeout: float,
        connect_timeout: float,
        clock: Clock,
    ) -> None:
        self._clock = clock
        self._host = host
        self._port = port
        self._authority = authority.encode("idna")
        self._ssl = ssl_context
        self._server_hostname = server_hostname
        self._idle: deque[_Connection] = deque()
        self._all: set[_Connection] = set()
        self._slots = asyncio.Semaphore(max_connections)
        self._idle_timeout = idle_timeout
        self._connect_timeout = connect_timeout
        self._closed = False
        self.opened = 0

    async def post(
        self, target: str, headers: dict[str, str], body: bytes, within: float
    ) -> Answer:
        """POST ``body`` to ``target`` (a path with its query); ``headers``
        must not carry Host or Content-Length."""
        request = self._request(target, headers, body)
        async with self._slots:
            try:
                async with asyncio.timeout(within):
                    connection = await self._acquire()
                    try:
                        answer = await connection.exchange(request)
                    except BaseException:
                        connection.close()
                        raise
            except TimeoutError:
                raise TransportError(f"POST {target}: no answer within {within:g}s") from None
            except OSError as err:
                raise TransportError(f"POST {target}: {err!r}") from err
            self._release(connection)
            return answer

    def _request(self, target: str, headers: dict[str, str], body: bytes) -> bytes:
        head = [b"POST ", target.encode(), b" HTTP/1.1\r\nHost: ", self._authority, b"\r\n"]
        for name, value in headers.items():
            head += (name.encode(), b": ", value.encode("latin-1"), b"\r\n")
        head += (b"Content-Length: ", str(len(body)).encode(), b"\r\n\r\n", body)
        return b"".join(head)

    async def _acquire(self) -> _Connection:
        if self._closed:
            raise TransportError("the client is closed")
        now = self._clock.now()
        while self._idle:
            connection = self._idle.pop()  # the most recently used: warm, least likely stale
            if connection.alive() and now - connection.idle_since < self._idle_timeout:
                return connection
            connection.close()
        async with asyncio.timeout(self._connect_timeout):
            _, connection = await asyncio.get_running_loop().create_connection(
                _Connection,
                self._host,
                self._port,
                ssl=self._ssl,
                server_hostname=self._server_hostname if self._ssl is not None else None,
            )
        self.opened += 1
        self._all.add(connection)
        connection.lost.add_done_callback(lambda _: self._all.discard(connection))
        return connection

    def idle(self) -> int:
        """Idle connections still open (reusable unless idle too long)."""
        return sum(1 for connection in self._idle if connection.alive())

    def _release(self, connection: _Connection) -> None:
        if self._closed or not connection.alive():
            connection.close()
            return
        connection.idle_since = self._clock.now()
        self._idle.append(connection)

    async def close(self) -> None:
        """Abort every connection; returns once each is gone."""
        self._closed = True
        self._idle.clear()
        connections = list(self._all)
        for connection in connections:
            connection.close()
        if connections:
            await asyncio.gather(*(c.lost for c in connections), return_exceptions=True)
