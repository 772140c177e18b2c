"""Plugin listeners: a minimal HTTP/1.1 server on a thread of its own.

``ListenerThread`` serves one plugin listener (``PluginHttp.listen``) from a
thread with its own ``selectors`` loop, so a busy scheduling cycle never
delays the plugin's clients. ``start`` (on the daemon's loop) returns once
the port is bound, or raises the bind error; ``stop`` closes the port and
every connection and joins the thread. Nothing else touches the thread's
sockets.

Why not aiohttp, nor even asyncio, here: the handlers are synchronous and the
bodies tiny, and on this thread every microsecond of CPU is GIL taken from
the scheduling cycle (each GIL hand-off back costs up to the interpreter's
switch interval). aiohttp's web layer costs about 2.5 times the CPU of this
protocol per request; an asyncio loop and transports (a timer re-armed per
read, handles per callback) cost more than the protocol itself. The loop
here does, per request: one ``select`` wake-up, one ``recv``, one ``send``.

On each request, in order: the ``gate`` (503 ``text/plain`` with its reason),
then the handler with at most ``max_body_bytes`` of the body (the rest is read
and discarded, never seen), a handler exception answering 500; a response's
``after`` is handed to the daemon's loop (``call_soon_threadsafe``).

The protocol, deliberately small (the clients are programs: autoscaler-agents
over Go's net/http, tests, the bench):
- request line ``METHOD target HTTP/1.x`` and headers, at most 8 KiB (else
  431 and close); a malformed head answers 400 and closes; other versions 505;
  strict ASCII grammar: method and header names are RFC 9110 tokens, the
  target visible ASCII, values without control characters, ``Content-Length``
  1 to 18 ASCII digits (Unicode digits such as ``²`` and huge lengths: 400);
- an unexpected error while handling a connection is logged and closes that
  connection only, never the loop;
- bodies framed by ``Content-Length`` only: ``Transfer-Encoding`` answers 411
  and closes (Go's client sets a length for in-memory bodies);
- keep-alive (HTTP/1.1 unless ``Connection: close``; HTTP/1.0 only with
  ``Connection: keep-alive``), pipelined requests answered in order,
  ``Expect: 100-continue`` honoured; idle connections closed after 75 s, a
  request whose head and body take longer than 30 s from its first byte too;
- back-pressure: above ``HIGH_WATER_BYTES`` of answers the client has not
  taken, the connection is not read and its buffered requests wait;
- at most ``requests_per_turn`` requests answered per connection per loop
  turn: the rest of a pipelined batch waits in ``HttpCore``'s backlog for the
  next turn, so one pipelining client cannot make a turn (and what waits
  behind it: other clients, a process listener's daemon messages) long;
- at most ``max_connections`` connections (more are closed when accepted);
  an accept error (e.g. EMFILE) pauses accepting for a second, and such
  warnings are logged at most once per ``LOG_EVERY_SECONDS``;
- the handler sees the path without the query string, undecoded, and the
  ``Authorization`` header as sent;
- a process endpoint may answer later (``PendingAnswer``): until it is
  resolved that connection reads and answers nothing more (pipelined answers
  stay in order); the endpoint bounds the wait.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import http
import logging
import math
import re
import selectors
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping

from scheduler.framework.services import (
    HttpHandler,
    HttpRequest,
    HttpResponse,
    ListenerLimits,
    PendingAnswer,
)

log = logging.getLogger(__name__)

# The GIL hand-over bound while plugin listener threads run (the interpreter's
# default is 5 ms). Every socket call releases the GIL, so a request costs a
# few hand-overs (wake-up, read, write), each up to this long while the
# scheduling cycle is busy: at 0.5 ms the listener topped out near 700
# requests/s under a busy cycle; at 0.1 ms it kept up. The cycle pays a forced
# switch only when a listener thread actually waits. Overridable (seconds) by
# the environment variable below, e.g. to trade agent latency for pods/s.
LISTENER_SWITCH_INTERVAL = 0.0001
SWITCH_INTERVAL_ENV = "PYSCHEDULER_LISTENER_SWITCH_INTERVAL"

MAX_HEAD_BYTES = 8192
IDLE_SECONDS = 75.0
# A request's head and body must arrive within this long of its first byte
# (kube's and Go's servers close slow heads after about 30 s).
REQUEST_SECONDS = 30.0
# Back-pressure: above this many answer bytes not yet taken by the client, the
# connection is not read (nor its buffered requests answered) until it drains.
HIGH_WATER_BYTES = 256 << 10
MAX_CONNECTIONS = 1024  # per listener; beyond it new connections are closed at once
REQUESTS_PER_TURN = 16  # per connection per loop turn; the rest wait for the next turn
ACCEPT_BACKOFF_SECONDS = 1.0  # after an accept error (e.g. EMFILE) stop accepting this long
LOG_EVERY_SECONDS = 10.0  # accept errors and refused connections: one warning per period
SWEEP_SECONDS = 1.0  # how often idle connections are looked for
BACKLOG = 1024
_TEXT = "text/plain"
# Strict ASCII grammar (RFC 9110/9112): ``str.isdigit``/``isalpha`` accept
# Unicode (``"²".isdigit()`` is true and ``int("²")`` raises), so each field is
# matched against its ASCII production instead.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+", re.ASCII)
_TARGET = re.compile(r"[\x21-\x7e]+", re.ASCII)
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")
MAX_LENGTH_DIGITS = 18  # a Content-Length beyond 10**18 - 1 is refused (400)
_LENGTH = re.compile(f"[0-9]{{1,{MAX_LENGTH_DIGITS}}}", re.ASCII)

# A thread listener's handler answers at once; a process endpoint may answer later.
CoreHandler = Callable[[HttpRequest], HttpResponse | PendingAnswer]

# Why a listener refuses now (None: serve), given its ``leader_only``.
Gate = Callable[[], str | None]


def default_limits(max_connections: int = MAX_CONNECTIONS) -> ListenerLimits:
    """The module's limits as they are now (tests shorten the constants)."""
    return ListenerLimits(
        max_connections=max_connections,
        request_seconds=REQUEST_SECONDS,
        idle_seconds=IDLE_SECONDS,
        high_water_bytes=HIGH_WATER_BYTES,
        requests_per_turn=REQUESTS_PER_TURN,
    )


def listener_switch_interval(environ: Mapping[str, str]) -> float:
    """The switch interval to run with while listeners serve: ``SWITCH_INTERVAL_ENV``
    (seconds, > 0) when set, else ``LISTENER_SWITCH_INTERVAL``; a bad value is
    an error (``ValueError``), not silently ignored."""
    raw = environ.get(SWITCH_INTERVAL_ENV, "").strip()
    if not raw:
        return LISTENER_SWITCH_INTERVAL
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{SWITCH_INTERVAL_ENV}={raw!r}: want a positive number of seconds")
    return seconds


@contextlib.contextmanager
def switch_interval(seconds: float | None) -> Iterator[None]:
    """Run with ``sys.setswitchinterval(seconds)`` (None: unchanged), restoring
    the previous interval afterwards, also on an exception."""
    previous = sys.getswitchinterval()
    if seconds is not None:
        sys.setswitchinterval(seconds)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


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
    __slots__ = ("authorization", "close", "expect_continue", "length", "method", "path")

    def __init__(self, raw: bytes) -> None:
        try:
            text = raw.decode("latin-1")
        except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes anything
            raise _BadRequest(400, "bad request") from None
        lines = text.split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or not _TARGET.fullmatch(parts[1]):
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
        self.authorization = ""
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon or not _TOKEN.fullmatch(name) or not _FIELD_VALUE.fullmatch(value):
                raise _BadRequest(400, "bad header line")
            name, value = name.lower(), value.strip(" \t")
            if name == "content-length":
                if not _LENGTH.fullmatch(value) or (length is not None and int(value) != length):
                    raise _BadRequest(400, "bad Content-Length")
                length = int(value)
            elif name == "transfer-encoding":
                raise _BadRequest(411, "Content-Length required (no Transfer-Encoding)")
            elif name == "connection":
                connection = value.lower()
            elif name == "authorization":
                self.authorization = value
            elif name == "expect" and value.lower() == "100-continue":
                self.expect_continue = True
        self.length = length or 0
        tokens = {token.strip() for token in connection.split(",")}
        self.close = "close" in tokens or (version == "HTTP/1.0" and "keep-alive" not in tokens)


class _Connection:
    """One client connection: requests parsed from the buffer, answered in order.

    Output the socket does not take at once is kept and flushed when it is
    writable (the loop asks ``wants_write``); ``close`` stops reading and
    closes once flushed (also when the client shuts its side: the answers
    already computed are still delivered)."""

    __slots__ = (
        "_buffer",
        "_closing",
        "_discard",
        "_head",
        "_listener",
        "_out",
        "_remote",
        "_served",
        "_started",
        "_turn",
        "_waiting",
        "last_active",
        "postponed",
        "sock",
    )

    def __init__(self, listener: HttpCore, sock: socket.socket, remote: str) -> None:
        self._listener = listener
        self.sock = sock
        self._buffer = bytearray()
        self._out = bytearray()
        self._head: _Head | None = None
        self._discard = 0  # body bytes beyond the limit still to skip
        self._remote = remote
        self._closing = False
        self.last_active = listener.clock()
        self._started: float | None = None  # first byte of the request being read
        self._turn = -1  # the listener's turn in which ``_served`` was counted
        self._served = 0
        self.postponed = False  # requests wait for the next turn: not read meanwhile
        self._waiting: PendingAnswer | None = None  # an answer decided later

    @property
    def waiting(self) -> bool:
        """An answer is pending (``PendingAnswer``): nothing more is read or answered."""
        return self._waiting is not None

    @property
    def closed(self) -> bool:
        return self.sock.fileno() < 0

    @property
    def remote(self) -> str:
        return self._remote

    @property
    def closing(self) -> bool:
        return self._closing

    @property
    def wants_write(self) -> bool:
        return bool(self._out)

    @property
    def buffered_bytes(self) -> int:
        """Bytes held for this connection: requests read, answers not sent."""
        return len(self._buffer) + len(self._out)

    @property
    def paused(self) -> bool:
        """Too many answers not taken by the client: read nothing more for now."""
        return len(self._out) > self._listener.limits.high_water_bytes

    def overdue(self, now: float) -> bool:
        """Idle too long, or a request's head/body too slow to arrive (counted
        from its first byte: more bytes never extend it)."""
        limits = self._listener.limits
        if now - self.last_active > limits.idle_seconds:
            return True
        return (
            self._started is not None
            and not self.paused
            and now - self._started > limits.request_seconds
        )

    def close(self) -> None:
        """Close once what is written is flushed (at once if nothing is pending)."""
        self._closing = True
        if not self._out:
            self._listener.forget(self)
        elif not self.closed:
            self._listener.watch(self)  # writable only: nothing more is read

    def abort(self) -> None:
        self._out.clear()
        self._closing = True
        self._listener.forget(self)

    def finish(self) -> None:
        """Shutting down: send what is pending (blocking, up to 1 s), then close."""
        if self._out and not self.closed:
            with contextlib.suppress(OSError):
                self.sock.settimeout(1.0)
                self.sock.sendall(self._out)
        self.abort()

    def _write(self, data: bytes) -> None:
        if self._out:
            self._out += data
            return
        try:
            sent = self.sock.send(data)
        except BlockingIOError:
            sent = 0
        except OSError:
            self.abort()
            return
        if sent < len(data):
            self._out += data[sent:]
            self._listener.watch(self)

    def flush(self) -> None:
        """The socket is writable: send what is pending."""
        try:
            sent = self.sock.send(self._out)
        except BlockingIOError:
            return
        except OSError:
            self.abort()
            return
        del self._out[:sent]
        if not self._out and self._closing:
            self._listener.forget(self)
            return
        if not self.paused and self._buffer and not self._closing:
            self._process()  # requests held back while paused
        if not self.closed:
            self._listener.watch(self)

    def readable(self) -> None:
        try:
            data = self.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the client is done sending: flush the answers, then close
            self._buffer.clear()
            self._head = None
            self.close()
            return
        self.data_received(data)

    def data_received(self, data: bytes) -> None:
        self.last_active = now = self._listener.clock()
        if self._discard:
            skipped = min(self._discard, len(data))
            self._discard -= skipped
            data = data[skipped:]
        if data and self._started is None:
            self._started = now
        self._buffer += data
        self._process()

    def _process(self) -> None:
        listener = self._listener
        if self._turn != listener.turn:
            self._turn, self._served = listener.turn, 0
        budget = listener.limits.requests_per_turn
        while not self._closing:
            if self._waiting is not None:  # answers go out in order
                return
            if self.paused:  # the client does not read: stop reading it too
                listener.watch(self)
                return
            if self._served >= budget:  # the rest of the batch waits a turn
                self.postponed = True
                listener.postpone(self)
                listener.watch(self)
                return
            if not self._step():
                return

    def resume(self) -> None:
        """A new turn: answer more of what the buffer holds."""
        self.postponed = False
        if self._closing or self.closed:
            return
        if not self.paused and self._buffer:
            self._process()
        if not self.closed:
            self._listener.watch(self)

    def _step(self) -> bool:
        """Handle what the buffer holds; False when more bytes are needed."""
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
                self._write(b"HTTP/1.1 100 Continue\r\n\r\n")
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
        self._started = self._listener.clock() if buffer or self._discard else None
        self._served += 1
        answer = self._listener.answer(
            head.method, head.path, body, self._remote, head.authorization
        )
        if isinstance(answer, PendingAnswer):
            if answer.response is None:
                self._waiting = answer
                answer.on_resolved(lambda response: self._resolved(response, head.close))
                self._listener.watch(self)  # not read while it waits
                return False
            answer = self._listener.unpack(answer.response)
        status, content_type, payload = answer
        self._write(_response(status, content_type, payload, head.close))
        if head.close:
            self.close()
            return False
        return True

    def _resolved(self, response: HttpResponse, close: bool) -> None:
        """The pending answer is decided: send it, then go on with the buffer."""
        self._waiting = None
        if self.closed or self._closing:
            return
        status, content_type, payload = self._listener.unpack(response)
        self._write(_response(status, content_type, payload, close))
        if close:
            self.close()
            return
        if self._buffer and not self.postponed:
            self._process()
        if not self.closed:
            self._listener.watch(self)

    def _fail(self, status: int, message: str) -> None:
        self._write(_response(status, _TEXT, message.encode(), close=True))
        self.close()


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host`` (a name or address of either family;
    empty: every address, dual-stack when the system has it)."""
    if not host:
        if socket.has_dualstack_ipv6():
            return socket.create_server(
                ("::", port), family=socket.AF_INET6, backlog=BACKLOG, dualstack_ipv6=True
            )
        host = "0.0.0.0"
    family, _, _, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    return socket.create_server(address[:2], family=family, backlog=BACKLOG)


class HttpCore:
    """The HTTP side of a listener's ``selectors`` loop: accepting, reading,
    answering and closing connections. Whoever runs the loop (``ListenerThread``
    here, ``scheduler.services.process`` in a child process) hands it the
    events of the server socket and of the connections (``dispatch``) and
    calls ``sweep`` about once a second."""

    def __init__(
        self,
        name: str,
        handler: CoreHandler,
        *,
        max_body_bytes: int,
        gate: Gate,
        selector: selectors.BaseSelector,
        server: socket.socket,
        run_after: Callable[[Callable[[], None]], None] | None = None,
        max_connections: int = MAX_CONNECTIONS,
        limits: ListenerLimits | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.max_body_bytes = max(max_body_bytes, 0)
        self.limits = limits if limits is not None else default_limits(max_connections)
        self.max_connections = max(self.limits.max_connections, 1)
        self.clock = clock
        self.turn = 0  # counts the loop's turns (``new_turn``)
        self._backlog: dict[_Connection, None] = {}  # postponed, in order
        self._accept_resume: float | None = None  # not accepting until then
        self._warned_at = -math.inf
        self._unlogged = 0  # accept errors and refusals since the last warning
        self._handler, self._gate = handler, gate
        self._selector, self._server = selector, server
        self._run_after = run_after
        self.connections: set[_Connection] = set()  # the loop's thread only
        server.setblocking(False)
        selector.register(server, selectors.EVENT_READ, self)

    def new_turn(self) -> None:
        """The loop begins a turn: each connection may answer
        ``requests_per_turn`` more; the postponed ones are served first."""
        self.turn += 1
        backlog, self._backlog = self._backlog, {}
        for connection in backlog:
            try:
                connection.resume()
            except Exception:  # contained to this connection, as in ``dispatch``
                log.exception(
                    "plugin endpoint %s: connection %s failed", self.name, connection.remote
                )
                connection.abort()

    @property
    def has_backlog(self) -> bool:
        """Requests read but postponed to the next turn (don't wait in select)."""
        return bool(self._backlog)

    def postpone(self, connection: _Connection) -> None:
        self._backlog[connection] = None

    def dispatch(self, key: selectors.SelectorKey, mask: int) -> bool:
        """Handle one ready key if it is ours (the server or a connection)."""
        data = key.data
        if isinstance(data, _Connection):
            try:
                if mask & selectors.EVENT_WRITE:
                    data.flush()
                if mask & selectors.EVENT_READ and not data.closed:
                    data.readable()
            except Exception:  # contained to this connection, never the loop's end
                log.exception("plugin endpoint %s: connection %s failed", self.name, data.remote)
                data.abort()
            return True
        if data is self:
            self._accept()
            return True
        return False

    def sweep(self, now: float) -> None:
        """Close idle or too slow connections; accept again after a back-off."""
        for connection in [c for c in self.connections if c.overdue(now)]:
            connection.abort()
        if self._accept_resume is not None and now >= self._accept_resume:
            self._accept_resume = None
            with contextlib.suppress(KeyError, ValueError, OSError):
                self._selector.register(self._server, selectors.EVENT_READ, self)

    def _warn(self, message: str, *args: object) -> None:
        """At most one warning per ``LOG_EVERY_SECONDS``, counting the rest."""
        now = self.clock()
        if now - self._warned_at < LOG_EVERY_SECONDS:
            self._unlogged += 1
            return
        suppressed, self._unlogged, self._warned_at = self._unlogged, 0, now
        log.warning(
            "plugin endpoint %s: " + message + " (%d more since the last warning)",
            self.name,
            *args,
            suppressed,
        )

    def close(self) -> None:
        """Send what is pending (briefly), close every connection and the server."""
        for connection in list(self.connections):
            connection.finish()
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(self._server)
        self._server.close()

    def _accept(self) -> None:
        while True:
            try:
                sock, peer = self._server.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:  # e.g. out of file descriptors: back off
                self._warn(
                    "accept failed: %s; not accepting for %.1f s", error, ACCEPT_BACKOFF_SECONDS
                )
                self._accept_resume = self.clock() + ACCEPT_BACKOFF_SECONDS
                with contextlib.suppress(KeyError, ValueError):
                    self._selector.unregister(self._server)
                return
            if len(self.connections) >= self.max_connections:
                sock.close()
                self._warn("%d connections open: connection refused", len(self.connections))
                continue
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            remote = str(peer[0]) if isinstance(peer, tuple) and peer else ""
            connection = _Connection(self, sock, remote)
            self.connections.add(connection)
            self._selector.register(sock, selectors.EVENT_READ, connection)

    def watch(self, connection: _Connection) -> None:
        """Wait for the socket to be writable too while output is pending; not
        readable while closing or paused (back-pressure)."""
        if connection.closed:
            return
        held = connection.closing or connection.paused or connection.postponed or connection.waiting
        events = 0 if held else selectors.EVENT_READ
        if connection.wants_write:
            events |= selectors.EVENT_WRITE
        if not events:  # postponed with nothing to write: not watched until resumed
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(connection.sock)
            return
        try:
            self._selector.modify(connection.sock, events, connection)
        except KeyError:
            self._selector.register(connection.sock, events, connection)

    def forget(self, connection: _Connection) -> None:
        """Close the connection's socket and stop watching it; idempotent."""
        if connection.closed:
            return
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(connection.sock)
        connection.sock.close()
        self.connections.discard(connection)
        self._backlog.pop(connection, None)

    def answer(
        self, method: str, path: str, body: bytes, remote: str, authorization: str = ""
    ) -> tuple[int, str, bytes] | PendingAnswer:
        refusal = self._gate()
        if refusal is not None:
            return 503, _TEXT, refusal.encode()
        try:
            response = self._handler(HttpRequest(method, path, body, remote, authorization))
        except Exception:
            log.exception("plugin endpoint %s failed", self.name)
            return 500, _TEXT, b"internal error"
        if isinstance(response, PendingAnswer):
            return response
        return self.unpack(response)

    def unpack(self, response: HttpResponse) -> tuple[int, str, bytes]:
        """What goes on the wire; ``after`` handed to the daemon's loop."""
        if response.after is not None:
            if self._run_after is None:
                log.error("plugin endpoint %s: a follow-up is not supported here", self.name)
            else:
                self._run_after(response.after)
        return response.status, response.content_type, response.body


class ListenerThread:
    """One plugin listener served from its own thread and ``selectors`` loop."""

    def __init__(
        self,
        name: str,
        handler: HttpHandler,
        *,
        host: str,
        port: int,
        max_body_bytes: int,
        gate: Gate,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.name = name
        self.max_body_bytes = max(max_body_bytes, 0)
        self.max_connections = max_connections
        self._handler, self._gate = handler, gate
        self._host, self._port = host, port
        self._bound: concurrent.futures.Future[int] = concurrent.futures.Future()
        self._exited: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._daemon_loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._wake_send: socket.socket | None = None  # written by ``stop``
        self._core: HttpCore | None = None
        self.port = 0

    @property
    def connections(self) -> set[_Connection]:
        return set() if self._core is None else self._core.connections

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
        thread, wake = self._thread, self._wake_send
        if thread is None:
            return
        if not self._exited.done() and wake is not None:
            with contextlib.suppress(OSError):  # the thread already closed it
                wake.send(b"x")
        await asyncio.wrap_future(self._exited)
        thread.join()  # it has finished its last statement or is about to

    # ------------------------------------------------ on the listener thread
    def _main(self) -> None:
        try:
            server = bind(self._host, self._port)
        except BaseException as error:
            self._bound.set_exception(error)
            self._exited.set_result(None)
            return
        selector = selectors.DefaultSelector()
        wake_receive, self._wake_send = socket.socketpair()
        core = self._core = HttpCore(
            self.name,
            self._handler,
            max_body_bytes=self.max_body_bytes,
            gate=self._gate,
            selector=selector,
            server=server,
            run_after=self._run_after,
            max_connections=self.max_connections,
        )
        try:
            wake_receive.setblocking(False)
            selector.register(wake_receive, selectors.EVENT_READ, wake_receive)
            self._bound.set_result(int(server.getsockname()[1]))
            self._serve(selector, core)
        finally:
            core.close()
            selector.close()
            wake_receive.close()
            self._wake_send.close()
            self._exited.set_result(None)

    def _serve(self, selector: selectors.BaseSelector, core: HttpCore) -> None:
        next_sweep = time.monotonic() + SWEEP_SECONDS
        while True:
            core.new_turn()
            for key, mask in selector.select(0 if core.has_backlog else SWEEP_SECONDS):
                if not core.dispatch(key, mask):  # ``stop`` wrote to the wake-up socket
                    return
            now = time.monotonic()
            if now >= next_sweep:
                next_sweep = now + SWEEP_SECONDS
                core.sweep(now)

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
