"""Plugin listeners: a minimal HTTP/1.1 server on a thread of its own.

``ListenerThread`` serves one plugin listener (``PluginHttp.listen``) from a
thread with its own event loop, so a busy scheduling cycle never delays the
plugin's clients. ``start`` (on the daemon's loop) returns once the port is
bound, or raises the bind error; ``stop`` closes the port and every
connection and joins the thread. Nothing else touches the thread's loop.

Why not aiohttp here: the handlers are synchronous and the bodies tiny, and
on this thread every microsecond of CPU is GIL taken from the scheduling
cycle. aiohttp's web layer costs about 2.5 times the CPU of this protocol per
request (a micro-benchmark on the project machine: ~1.1 k vs ~2.7 k requests/s
with the same client), which decides whether 1000 agent requests/s fit.

On each request, in order: the ``gate`` (503 ``text/plain`` with its reason),
then the handler with at most ``max_body_bytes`` of the body (the rest is read
and discarded, never seen), a handler exception answering 500; a response's
``after`` is handed to the daemon's loop (``call_soon_threadsafe``).

The protocol, deliberately small (the clients are programs: autoscaler-agents
over Go's net/http, tests, the bench):
- request line ``METHOD target HTTP/1.x`` and headers, at most 8 KiB (else
  431 and close); a malformed head answers 400 and closes; other versions 505;
- bodies framed by ``Content-Length`` only: ``Transfer-Encoding`` answers 411
  and closes (Go's client sets a length for in-memory bodies);
- keep-alive (HTTP/1.1 unless ``Connection: close``; HTTP/1.0 only with
  ``Connection: keep-alive``), pipelined requests answered in order,
  ``Expect: 100-continue`` honoured; idle connections closed after 75 s;
- the handler sees the path without the query string, undecoded.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import http
import logging
import threading
from collections.abc import Callable

from scheduler.framework.services import HttpHandler, HttpRequest, HttpResponse

log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 8192
IDLE_SECONDS = 75.0
_TEXT = "text/plain"

# Why a listener refuses now (None: serve), given its ``leader_only``.
Gate = Callable[[], str | None]


class _BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _response(status: int, content_type: str, body: bytes, close: bool) -> bytes:
    try:
        phrase = http.HTTPStatus(status).phrase
    except ValueError:
        phrase = ""
    head = (
        f"HTTP/1.1 {status} {phrase}\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\n"
    )
    if close:
        head += "Connection: close\r\n"
    return head.encode("latin-1") + b"\r\n" + body


class _Head:
    __slots__ = ("close", "expect_continue", "length", "method", "path")

    def __init__(self, raw: bytes) -> None:
        try:
            text = raw.decode("latin-1")
        except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes anything
            raise _BadRequest(400, "bad request") from None
        lines = text.split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[0].isalpha() or not parts[1]:
            raise _BadRequest(400, "bad request line")
        method, target, version = parts
        if not version.startswith("HTTP/"):
            raise _BadRequest(400, "bad request line")
        if version not in ("HTTP/1.1", "HTTP/1.0"):
            raise _BadRequest(505, "HTTP version not supported")
        self.method = method
        self.path = target.split("?", 1)[0]
        length: int | None = None
        connection = ""
        self.expect_continue = False
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon or not name or name != name.strip():
                raise _BadRequest(400, "bad header line")
            name, value = name.lower(), value.strip()
            if name == "content-length":
                if not value.isdigit() or (length is not None and int(value) != length):
                    raise _BadRequest(400, "bad Content-Length")
                length = int(value)
            elif name == "transfer-encoding":
                raise _BadRequest(411, "Content-Length required (no Transfer-Encoding)")
            elif name == "connection":
                connection = value.lower()
            elif name == "expect" and value.lower() == "100-continue":
                self.expect_continue = True
        self.length = length or 0
        tokens = {token.strip() for token in connection.split(",")}
        self.close = "close" in tokens or (version == "HTTP/1.0" and "keep-alive" not in tokens)


class _Connection(asyncio.Protocol):
    """One client connection: requests parsed from the buffer, answered in order."""

    def __init__(self, listener: ListenerThread) -> None:
        self._listener = listener
        self._transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._head: _Head | None = None
        self._discard = 0  # body bytes beyond the limit still to skip
        self._idle: asyncio.TimerHandle | None = None
        self._remote = ""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        peer = transport.get_extra_info("peername")
        self._remote = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        self._listener.connections.add(self)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._listener.connections.discard(self)
        if self._idle is not None:
            self._idle.cancel()
        self._transport = None

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def _arm(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
        self._idle = asyncio.get_running_loop().call_later(IDLE_SECONDS, self.close)

    def data_received(self, data: bytes) -> None:
        self._arm()
        if self._discard:
            skipped = min(self._discard, len(data))
            self._discard -= skipped
            data = data[skipped:]
        self._buffer += data
        while self._transport is not None and not self._transport.is_closing():
            if not self._step():
                return

    def _step(self) -> bool:
        """Handle what the buffer holds; False when more bytes are needed."""
        transport = self._transport
        assert transport is not None
        buffer = self._buffer
        if self._head is None:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(buffer) > MAX_HEAD_BYTES:
                    self._fail(431, "request header fields too large")
                return False
            if end > MAX_HEAD_BYTES:
                self._fail(431, "request header fields too large")
                return False
            try:
                self._head = _Head(bytes(buffer[:end]))
            except _BadRequest as error:
                self._fail(error.status, str(error))
                return False
            del buffer[: end + 4]
            if self._head.expect_continue and self._head.length:
                transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        head = self._head
        limit = self._listener.max_body_bytes
        wanted = min(head.length, limit)
        if len(buffer) < wanted:
            return False
        body = bytes(buffer[:wanted])
        rest = head.length - wanted  # beyond the limit: skipped, never seen
        skipped = min(rest, len(buffer) - wanted)
        del buffer[: wanted + skipped]
        self._discard = rest - skipped
        self._head = None
        status, content_type, payload = self._listener.answer(
            head.method, head.path, body, self._remote
        )
        transport.write(_response(status, content_type, payload, head.close))
        if head.close:
            transport.close()
            return False
        return True

    def _fail(self, status: int, message: str) -> None:
        transport = self._transport
        assert transport is not None
        transport.write(_response(status, _TEXT, message.encode(), close=True))
        transport.close()


class ListenerThread:
    """One plugin listener served from its own thread and event loop."""

    def __init__(
        self,
        name: str,
        handler: HttpHandler,
        *,
        host: str,
        port: int,
        max_body_bytes: int,
        gate: Gate,
    ) -> None:
        self.name = name
        self.max_body_bytes = max(max_body_bytes, 0)
        self._handler, self._gate = handler, gate
        self._host, self._port = host, port
        self._bound: concurrent.futures.Future[int] = concurrent.futures.Future()
        self._exited: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._daemon_loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.connections: set[_Connection] = set()  # the thread's loop only
        self.port = 0

    # ------------------------------------------------ on the daemon's loop
    async def start(self) -> None:
        self._daemon_loop = asyncio.get_running_loop()
        self._thread = threading.Thread(
            target=self._main, name=f"listener:{self.name}", daemon=True
        )
        self._thread.start()
        self.port = await asyncio.wrap_future(self._bound)

    async def stop(self) -> None:
        """Close the port and the connections, join the thread; idempotent."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if not self._exited.done():
            with contextlib.suppress(RuntimeError):  # its loop already closed
                loop.call_soon_threadsafe(loop.stop)
            await asyncio.wrap_future(self._exited)
        thread.join()  # it has finished its last statement or is about to

    # ------------------------------------------------ on the listener thread
    def _main(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        try:
            server = loop.run_until_complete(
                loop.create_server(lambda: _Connection(self), self._host, self._port)
            )
        except BaseException as error:
            loop.close()
            self._bound.set_exception(error)
            self._exited.set_result(None)
            return
        self._bound.set_result(int(server.sockets[0].getsockname()[1]))
        try:
            loop.run_forever()
            server.close()
            for connection in list(self.connections):
                connection.close()
            loop.run_until_complete(server.wait_closed())
            loop.run_until_complete(asyncio.sleep(0))  # let connection_lost run
        finally:
            loop.close()
            self._exited.set_result(None)

    def answer(self, method: str, path: str, body: bytes, remote: str) -> tuple[int, str, bytes]:
        refusal = self._gate()
        if refusal is not None:
            return 503, _TEXT, refusal.encode()
        try:
            response: HttpResponse = self._handler(HttpRequest(method, path, body, remote))
        except Exception:
            log.exception("plugin endpoint %s failed", self.name)
            return 500, _TEXT, b"internal error"
        if response.after is not None:
            self._run_after(response.after)
        return response.status, response.content_type, response.body

    def _run_after(self, after: Callable[[], None]) -> None:
        def guarded() -> None:
            try:
                after()
            except Exception:
                log.exception("plugin endpoint %s: follow-up failed", self.name)

        loop = self._daemon_loop
        assert loop is not None
        with contextlib.suppress(RuntimeError):  # the daemon's loop is closing
            loop.call_soon_threadsafe(guarded)
