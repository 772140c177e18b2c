"""Plugin listeners served by a child process (``PluginHttp.listen_process``).

Why a process: a listener thread shares the daemon's GIL, and on a saturated
machine the OS preempts the CPU-bound scheduling loop while it holds the GIL,
for up to tens of milliseconds; the listener then waits with it (measured:
agent p99 10 ms while scheduling, 0.6 ms for the same server in a process of
its own; ARCHITECTURE.md, AutoscaleEnforcer). A child process has its own GIL.

Daemon side, ``ProcessListener`` (the ``ProcessChannel`` a plugin holds):
- ``start`` (the ops server's, on the daemon's loop) binds the port in the
  daemon (a bind error fails start-up there), spawns
  ``python -m scheduler.services.process <channel fd> <socket fd>`` with both
  descriptors, sends the boot message (factory, name, body limit, logging)
  and waits for the child's ``ready`` (or its ``failed`` with the traceback);
- ``send`` queues a frame and writes what the socket takes; the rest is
  written when it is writable (the loop's writer): it never blocks;
- ``call`` writes and then blocks (``poll``) until its answer, delivering to
  ``on_message`` every message the child sent before it, in order; a timeout,
  the child's exception or its death raise ``ChannelError``. It blocks the
  daemon's loop: only for tests and tools. ``ask`` is the same call without
  blocking: a future resolved by the loop's reader (after the messages the
  child sent before answering), failed after its budget or on the child's
  loss;
- liveness: every ``HEARTBEAT_SECONDS`` the daemon reads what is waiting and
  sends a ping, which the child's loop answers as it reads it (before any
  daemon message or client request of that turn); no answer for
  ``ListenerLimits.liveness_seconds`` (a hung handler, a deadlock, SIGSTOP)
  and the child is killed (SIGKILL), which resolves ``wait_lost``;
- ``restart`` (after a loss) spawns a new child on the same listening socket,
  which the daemon keeps open (connections made meanwhile wait in its
  backlog); what was sent while no child ran is dropped;
- messages between calls are read by the loop's reader and delivered in order;
- ``update_gate`` forwards the daemon's gate (synced, leading, shutting down)
  when it changes; the child answers 503 with the reason meanwhile. The gate
  may carry an expiry (``until``, ``time.monotonic`` seconds: CLOCK_MONOTONIC
  is one clock for every process of the host): past it the child refuses as
  a follower does (``LEADERSHIP_UNCONFIRMED``) until the daemon renews it, so
  a child whose daemon stalls stops serving before the lease can pass to
  another replica;
- end of file from the child, unless ``stop`` closed it, resolves
  ``wait_lost``; ``stop`` closes the channel (the child exits on end of file)
  and waits up to ``STOP_SECONDS`` before killing it.

Unit tests and ``simulate`` run no ops server: the first ``call`` or HTTP
request on a listener that was never started builds the endpoint in this
process (inline mode) and delivers what was sent before; from then on every
message is delivered at once, each pickled and unpickled as on the wire.

Child side, ``main``: at the ``nice`` asked for (where permitted: a lower
value needs CAP_SYS_NICE; otherwise it says so and runs at the default), one
thread, one ``selectors`` loop over the listening
socket, its connections (``scheduler.services.thread.HttpCore``) and the channel.
Daemon messages are handled in arrival order, first in each loop turn: every
one up to the last call read (a call's answer is what the daemon waits for),
then more for at most ``TURN_SECONDS``, and what they produced is written at
once; only then the clients' requests of that turn, at most
``ListenerLimits.requests_per_turn`` per connection (``HttpCore``), so HTTP
requests interleave with a burst of messages and no client makes a turn
long; after each turn ``ProcessEndpoint.idle`` runs and the queued frames
are written. SIGINT
is ignored (the daemon owns shutdown); the child exits when the channel ends.

Priority: the child starts a session of its own. Where the kernel shares CPU
between sessions rather than processes (autogroup, for processes outside
any cgroup but the root), its share then no longer shrinks while the
daemon's scheduling loop is busy, and it gets a CPU soon after a request
wakes it; ``nice`` applies to the process and to that group. Inside a
container's cgroup the process nice orders it against the daemon.

Garbage collection in the child: what survives a second (the imports, the
endpoint's state, stored objects) is moved out of the collector's sight
(``gc.freeze``, once booted and then each second), so no collection ever
scans the whole heap: a full collection of the AutoscaleEnforcer's state
took 40 ms, far above its agents' latency target. Reference counting still
frees every object; only reference cycles alive at a freeze would stay (the
endpoint's steady state makes none: its collections found nothing).

Frames: a 4-byte big-endian length, then a pickle. Both ends are this
program, started together from the same files; nothing else writes to the
channel.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import gc
import importlib
import logging
import os
import pickle
import select
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scheduler.framework.services import (
    HEARTBEAT_SECONDS,
    ChannelError,
    HttpRequest,
    HttpResponse,
    ListenerLimits,
    PendingAnswer,
    ProcessEndpoint,
)
from scheduler.ops.logsetup import JsonFormatter, configure_logging
from scheduler.services.thread import SWEEP_SECONDS, HttpCore, bind, default_limits

log = logging.getLogger(__name__)

READY_SECONDS = 60.0  # the child's imports and the factory, on a loaded machine
STOP_SECONDS = 5.0
# How long the child handles daemon messages before it looks at its clients
# again (a burst of informer events must not hold up their requests).
TURN_SECONDS = 0.0003
NOT_STARTED = "not ready: informers syncing or plugins starting"
LEADERSHIP_UNCONFIRMED = "not the leader: leadership not confirmed by the scheduler in time"
_READ_BYTES = 65536
AUTOGROUP = Path("/proc/self/autogroup")
_HEADER = struct.Struct("!I")

# Frame tags. Daemon to child: boot, gate, send, call, ping. Child to daemon:
# ready, failed, send, reply, pong.
_BOOT, _GATE, _SEND, _CALL, _PING = "boot", "gate", "send", "call", "ping"
_READY, _FAILED, _REPLY, _PONG = "ready", "failed", "reply", "pong"

Factory = Callable[[Any], ProcessEndpoint]
OnMessage = Callable[[object], None]


def encode(message: object) -> bytes:
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(payload)) + payload


class Frames:
    """Splits a byte stream into the messages ``encode`` framed."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[Any]:
        return [pickle.loads(payload) for payload in self.feed_raw(data)]

    def feed_raw(self, data: bytes) -> list[bytes]:
        """The complete frames' payloads, still pickled."""
        buffer = self._buffer
        buffer += data
        payloads: list[bytes] = []
        start = 0
        while len(buffer) - start >= _HEADER.size:
            (length,) = _HEADER.unpack_from(buffer, start)
            end = start + _HEADER.size + length
            if len(buffer) < end:
                break
            payloads.append(bytes(buffer[start + _HEADER.size : end]))
            start = end
        del buffer[:start]
        return payloads


def load_factory(path: str) -> Factory:
    """``"package.module:function"`` -> the function."""
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"process listener factory {path!r}: want 'package.module:function'")
    factory: Factory = getattr(importlib.import_module(module_name), attribute)
    return factory


def _round_trip(message: object) -> Any:
    return pickle.loads(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


class _InlineChild:
    """The child's channel when the endpoint runs in this process."""

    immediate = True

    def __init__(self) -> None:
        self.outbox: list[object] = []

    def send(self, message: object) -> None:
        self.outbox.append(_round_trip(message))


class ChildGate:
    """The child's view of the daemon's gate: a refusal reason (None: serve)
    and, while serving, an expiry after which it refuses as a follower does.
    Pure (``now`` passed in)."""

    def __init__(self, reason: str | None = NOT_STARTED, until: float | None = None) -> None:
        self.reason, self.until = reason, until

    def update(self, reason: str | None, until: float | None) -> None:
        self.reason, self.until = reason, until

    def refusal(self, now: float) -> str | None:
        if self.reason is None and self.until is not None and now >= self.until:
            return LEADERSHIP_UNCONFIRMED
        return self.reason


class ProcessListener:
    """The daemon's end of one process listener (see the module docstring)."""

    def __init__(
        self,
        name: str,
        port: int,
        factory: str,
        on_message: OnMessage,
        *,
        max_body_bytes: int,
        leader_only: bool,
        nice: int = 0,
        limits: ListenerLimits | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.nice = nice
        self.port = port
        self.factory = factory
        self.max_body_bytes = max(max_body_bytes, 0)
        self.leader_only = leader_only
        self.limits = limits if limits is not None else default_limits()
        self._clock = clock
        self._on_message = on_message
        self._out = bytearray()  # frames not yet written (once started)
        self._frames = Frames()
        self._next_call = 0
        self._asks: dict[int, tuple[asyncio.Future[object], asyncio.TimerHandle]] = {}
        self._server: socket.socket | None = None  # kept open for restarts
        self._host = ""
        self._last_pong = 0.0
        self._heartbeat: asyncio.TimerHandle | None = None
        self.restarts = 0
        self._sock: socket.socket | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._writer = False  # the loop's writer is registered
        self._flush_soon = False  # a ``_flush`` is queued on the loop
        self._ready: asyncio.Future[None] | None = None
        self._lost: asyncio.Future[str] | None = None
        self._lost_reason = ""
        self._stopping = False
        self._gate: str | None = NOT_STARTED
        self._gate_until: float | None = None
        # Inline mode (no ops server): the endpoint in this process.
        self._inline: ProcessEndpoint | None = None
        self._inline_child: _InlineChild | None = None
        self._inline_lock = threading.RLock()
        # Sent before it was started or went inline: delivered then, in order.
        self._pending: list[object] = []

    # ------------------------------------------------------------ plugin side
    def send(self, message: object) -> None:
        if self._inline is not None:
            self._deliver_inline(message)
            return
        if self._process is None:
            self._pending.append(message)
            return
        if self._lost_reason and self._sock is not None:
            return  # no child until ``restart``: dropped (the plugin resends its state)
        self._out += encode((_SEND, message))
        if self._sock is not None and not self._flush_soon and not self._writer:
            # One write per loop iteration for every message sent in it.
            self._flush_soon = True
            loop = self._loop
            assert loop is not None
            loop.call_soon(self._flush)

    def call(self, message: object, timeout: float) -> object:
        if self._inline is None and self._process is None:
            self._go_inline()
        if self._inline is not None:
            return self._deliver_inline(message)
        return self._call(message, timeout)

    def ask(self, message: object, timeout: float) -> asyncio.Future[object]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[object] = loop.create_future()
        if self._inline is not None or self._process is None:
            try:
                future.set_result(self.call(message, timeout))
            except ChannelError as error:
                future.set_exception(error)
            return future
        if self._sock is None or self._lost_reason or self._stopping:
            future.set_exception(
                ChannelError(
                    f"plugin endpoint {self.name}: no process "
                    f"({self._lost_reason or 'not running'})"
                )
            )
            return future
        self._next_call += 1
        number = self._next_call
        timer = loop.call_later(timeout, self._ask_expired, number, timeout)
        self._asks[number] = (future, timer)
        self._queue(encode((_CALL, number, message)))
        return future

    def _ask_expired(self, number: int, timeout: float) -> None:
        entry = self._asks.pop(number, None)
        if entry is not None and not entry[0].done():
            entry[0].set_exception(
                ChannelError(
                    f"plugin endpoint {self.name}: no answer from its process in {timeout:g}s"
                )
            )

    def _answer_ask(self, number: int, ok: bool, value: object) -> None:
        entry = self._asks.pop(number, None)
        if entry is None:
            return  # timed out: nobody waits for it
        future, timer = entry
        timer.cancel()
        if future.done():
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(ChannelError(f"plugin endpoint {self.name}: {value}"))

    def _fail_asks(self) -> None:
        asks, self._asks = self._asks, {}
        for future, timer in asks.values():
            timer.cancel()
            if not future.done():
                future.set_exception(
                    ChannelError(f"plugin endpoint {self.name}: {self._lost_reason}")
                )

    async def wait_lost(self) -> str:
        if self._lost is None:
            await asyncio.Event().wait()  # inline mode: never lost
        assert self._lost is not None
        return await self._lost

    def handle_inline(self, request: HttpRequest) -> HttpResponse | PendingAnswer:
        """Answer an HTTP request with the in-process endpoint (inline mode);
        a ``PendingAnswer`` resolves as the messages it waits for arrive."""
        if self._inline is None:
            self._go_inline()
        endpoint = self._inline
        assert endpoint is not None
        with self._inline_lock:
            response = endpoint.handle(_round_trip(request))
            endpoint.idle()
            self._flush_inline()
        return response

    # ---------------------------------------------------------- inline mode
    def _go_inline(self) -> None:
        if self._process is not None:
            raise ChannelError(f"process listener {self.name!r} is served by a process")
        self._inline_child = _InlineChild()
        self._inline = load_factory(self.factory)(self._inline_child)
        pending, self._pending = self._pending, []
        for message in pending:
            self._deliver_inline(message)

    def _deliver_inline(self, message: object) -> object:
        endpoint = self._inline
        assert endpoint is not None
        with self._inline_lock:
            try:
                answer = endpoint.receive(_round_trip(message))
            except Exception as error:
                raise ChannelError(f"{self.name}: {error}") from error
            endpoint.idle()
            self._flush_inline()
            return _round_trip(answer)

    def _flush_inline(self) -> None:
        child = self._inline_child
        assert child is not None
        while child.outbox:
            self._dispatch(child.outbox.pop(0))

    # ------------------------------------------------------------ the owner
    async def start(self, host: str) -> None:
        """Bind, spawn the child, boot it and wait until it is ready."""
        if self._inline is not None:
            raise RuntimeError(f"process listener {self.name!r} already runs inline")
        self._loop = asyncio.get_running_loop()
        self._server = server = bind(host, self.port)
        self.port = int(server.getsockname()[1])
        await self._spawn()

    async def restart(self) -> None:
        """A new child on the same port, after the last one was lost."""
        process = self._process
        if process is None or self._server is None or self._stopping:
            raise RuntimeError(f"process listener {self.name!r} was not started")
        if not self._lost_reason:
            raise RuntimeError(f"process listener {self.name!r}: its process is still running")
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
        if self._sock is not None:
            self._sock.close()
        self._sock = None
        self._out = bytearray()
        self._frames = Frames()
        self._pending = []
        self._writer = self._flush_soon = False
        self._lost_reason = ""
        self.restarts += 1
        await self._spawn()

    async def _spawn(self) -> None:
        loop, server = self._loop, self._server
        assert loop is not None
        assert server is not None
        ours, theirs = socket.socketpair()
        try:
            environment = dict(os.environ)
            environment["PYTHONPATH"] = os.pathsep.join(sys.path)
            self._process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "scheduler.services.process",
                str(theirs.fileno()),
                str(server.fileno()),
                pass_fds=(theirs.fileno(), server.fileno()),
                env=environment,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own autogroup: see the module docstring
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.setblocking(False)
        self._sock = ours
        self._ready = loop.create_future()
        self._lost = loop.create_future()
        root = logging.getLogger()
        json_logs = any(isinstance(handler.formatter, JsonFormatter) for handler in root.handlers)
        boot = encode(
            (
                _BOOT,
                (
                    self.factory,
                    self.name,
                    self.max_body_bytes,
                    logging.getLevelName(root.getEffectiveLevel()),
                    json_logs,
                    (self._gate, self._gate_until),
                    self.nice,
                    self.limits,
                ),
            )
        )
        pending, self._pending = self._pending, []
        early = b"".join(encode((_SEND, message)) for message in pending)
        self._out[:0] = boot + early  # before anything sent while it was spawned
        loop.add_reader(ours, self._readable)
        self._flush()
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), READY_SECONDS)
        except TimeoutError:
            await self.stop()
            raise RuntimeError(
                f"plugin endpoint {self.name}: its process was not ready in {READY_SECONDS:g}s"
            ) from None
        except BaseException:
            await self.stop()
            raise
        self._last_pong = self._clock()
        self._beat()

    def _beat(self) -> None:
        """The heartbeat (see the module docstring): judge, then ping."""
        self._heartbeat = None
        loop, process = self._loop, self._process
        if loop is None or process is None or self._stopping or self._lost_reason:
            return
        self._drain()  # a pong already here counts, however late this timer ran
        if self._lost_reason:
            return
        liveness = self.limits.liveness_seconds
        if self._clock() - self._last_pong > liveness:
            log.error(
                "plugin endpoint %s: its process did not answer for %gs; killing it",
                self.name,
                liveness,
            )
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            self._gone(f"no heartbeat answer in {liveness:g}s: killed")
            return
        self._queue(encode((_PING,)))
        self._heartbeat = loop.call_later(HEARTBEAT_SECONDS, self._beat)

    def _drain(self) -> None:
        sock = self._sock
        while sock is not None and not self._lost_reason:
            try:
                ready = select.select([sock], [], [], 0)[0]
            except (OSError, ValueError):
                return
            if not ready:
                return
            self._readable()

    def update_gate(self, reason: str | None, until: float | None = None) -> None:
        """The daemon's gate for this listener now (None: serve), and when
        serving stops unless renewed (``time.monotonic`` seconds, None: never)."""
        if reason is not None:
            until = None
        if reason == self._gate and until == self._gate_until:
            return
        self._gate, self._gate_until = reason, until
        if self._process is not None and not self._lost_reason:
            self._queue(encode((_GATE, reason, until)))

    async def stop(self) -> None:
        """Close the channel, wait for the child (kill it if it lingers); idempotent."""
        process, sock, loop = self._process, self._sock, self._loop
        if process is None or self._stopping:
            return
        self._stopping = True
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            self._heartbeat = None
        if sock is not None and loop is not None:
            loop.remove_reader(sock)
            loop.remove_writer(sock)
            sock.close()
        if self._server is not None:
            self._server.close()
        self._lost_reason = self._lost_reason or "stopped"
        self._fail_asks()
        try:
            await asyncio.wait_for(process.wait(), STOP_SECONDS)
        except TimeoutError:
            log.warning("plugin endpoint %s: its process did not exit; killing it", self.name)
            process.kill()
            await process.wait()

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    # ------------------------------------------------------------ the wire
    def _queue(self, frame: bytes) -> None:
        self._out += frame
        if self._sock is not None and not self._writer:
            self._flush()

    def _flush(self) -> None:
        self._flush_soon = False
        sock, loop = self._sock, self._loop
        if sock is None or loop is None or self._stopping:
            return
        if not self._write_some(sock):
            return
        if self._out and not self._writer:
            loop.add_writer(sock, self._flush)
            self._writer = True
        elif not self._out and self._writer:
            loop.remove_writer(sock)
            self._writer = False

    def _write_some(self, sock: socket.socket) -> bool:
        """Write what the socket takes now; False (the child gone) on an error."""
        if self._out:
            try:
                sent = sock.send(self._out)
            except BlockingIOError:
                sent = 0
            except OSError as error:
                self._gone(f"writing to it failed: {error}")
                return False
            del self._out[:sent]
        return True

    def _readable(self) -> None:
        sock = self._sock
        assert sock is not None
        try:
            data = sock.recv(_READ_BYTES)
        except BlockingIOError:
            return
        except OSError as error:
            self._gone(f"reading from it failed: {error}")
            return
        if not data:
            self._gone("it closed the channel")
            return
        for frame in self._frames.feed(data):
            self._frame(frame, None)

    def _frame(self, frame: tuple[Any, ...], waiting: int | None) -> tuple[bool, object] | None:
        """Handle one frame from the child; returns the answer to call ``waiting``."""
        tag = frame[0]
        if tag == _SEND:
            self._dispatch(frame[1])
        elif tag == _REPLY:
            _, number, ok, value = frame
            if number == waiting:
                return ok, value
            self._answer_ask(number, ok, value)  # or a call that timed out: dropped
        elif tag == _PONG:
            self._last_pong = self._clock()
        elif tag == _READY:
            if self._ready is not None and not self._ready.done():
                self._ready.set_result(None)
        elif tag == _FAILED:
            message = f"plugin endpoint {self.name}: its process failed to start:\n{frame[1]}"
            if self._ready is not None and not self._ready.done():
                self._ready.set_exception(RuntimeError(message))
            else:
                log.error("%s", message)
        return None

    def _dispatch(self, message: object) -> None:
        try:
            self._on_message(message)
        except Exception:
            log.exception(
                "plugin endpoint %s: handling a message from its process failed", self.name
            )

    def _call(self, message: object, timeout: float) -> object:
        sock = self._sock
        if sock is None or self._lost_reason or self._stopping:
            raise ChannelError(
                f"plugin endpoint {self.name}: no process ({self._lost_reason or 'not running'})"
            )
        self._next_call += 1
        number = self._next_call
        self._out += encode((_CALL, number, message))
        deadline = time.monotonic() + timeout
        poller = select.poll()
        while True:
            if not self._write_some(sock):
                raise ChannelError(f"plugin endpoint {self.name}: {self._lost_reason}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ChannelError(
                    f"plugin endpoint {self.name}: no answer from its process in {timeout:g}s"
                )
            poller.register(sock, select.POLLIN | (select.POLLOUT if self._out else 0))
            if not poller.poll(remaining * 1000):
                continue
            try:
                data = sock.recv(_READ_BYTES)
            except BlockingIOError:
                continue
            except OSError as error:
                data = b""
                self._gone(f"reading from it failed: {error}")
            if not data:
                self._gone("it closed the channel")
                raise ChannelError(f"plugin endpoint {self.name}: {self._lost_reason}")
            answer: tuple[bool, object] | None = None
            for frame in self._frames.feed(data):
                found = self._frame(frame, number)
                if found is not None:
                    answer = found
            if answer is not None:
                self._flush()  # leave the loop's writer in step with the buffer
                ok, value = answer
                if not ok:
                    raise ChannelError(f"plugin endpoint {self.name}: {value}")
                return value

    def _gone(self, why: str) -> None:
        if self._lost_reason or self._stopping:
            return
        process = self._process
        code = None if process is None else process.returncode
        self._lost_reason = why if code is None else f"{why} (exit code {code})"
        sock, loop = self._sock, self._loop
        if sock is not None and loop is not None:
            loop.remove_reader(sock)
            if self._writer:
                loop.remove_writer(sock)
                self._writer = False
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(
                RuntimeError(
                    f"plugin endpoint {self.name}: its process exited: {self._lost_reason}"
                )
            )
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            self._heartbeat = None
        self._fail_asks()
        if self._lost is not None and not self._lost.done():
            self._lost.set_result(self._lost_reason)


# --------------------------------------------------------------- the child
class _ChildChannel:
    """The child's end: frames queued here are written by the loop."""

    immediate = False

    def __init__(self) -> None:
        self.out = bytearray()

    def send(self, message: object) -> None:
        self.out += encode((_SEND, message))


def _read_frame(sock: socket.socket, frames: Frames) -> Any:
    while True:
        data = sock.recv(_READ_BYTES)
        if not data:
            raise EOFError("the daemon closed the channel before booting this process")
        messages = frames.feed(data)
        if messages:
            return messages


class _Child:
    def __init__(self, channel: socket.socket, server: socket.socket) -> None:
        self.channel = channel
        self.server = server
        self.frames = Frames()
        self.out = _ChildChannel()
        self.gate = ChildGate()
        self.limits = ListenerLimits()
        self.calls_waiting = 0  # calls read, not yet answered

    def run(self) -> int:
        early = _read_frame(self.channel, self.frames)
        tag, boot = early[0]
        if tag != _BOOT:
            raise RuntimeError(f"expected the boot message, got {tag!r}")
        factory, name, max_body_bytes, level, json_logs, gate, nice, limits = boot
        self.gate.update(*gate)
        self.limits = limits
        configure_logging(level, json_logs)
        _renice(name, nice)
        try:
            endpoint = load_factory(factory)(self.out)
        except Exception:
            self.channel.sendall(encode((_FAILED, traceback.format_exc())))
            return 1
        gc.freeze()  # see the module docstring
        self.out.out[:0] = encode((_READY,))
        for message in early[1:]:
            if message[0] == _PING:
                self.out.out += encode((_PONG,))
            else:
                self._message(endpoint, message)
        return self._serve(endpoint, name, max_body_bytes)

    def _serve(self, endpoint: ProcessEndpoint, name: str, max_body_bytes: int) -> int:
        selector = selectors.DefaultSelector()
        gate = self.gate
        core = HttpCore(
            name,
            endpoint.handle,
            max_body_bytes=max_body_bytes,
            gate=lambda: gate.refusal(time.monotonic()),
            selector=selector,
            server=self.server,
            limits=self.limits,
        )
        self.channel.setblocking(False)
        selector.register(self.channel, selectors.EVENT_READ, self)
        writing = False
        next_sweep = time.monotonic() + SWEEP_SECONDS
        inbox: collections.deque[tuple[Any, ...]] = collections.deque()
        timeout = SWEEP_SECONDS
        try:
            while True:
                clients = []
                busy = bool(inbox) or core.has_backlog
                for key, mask in selector.select(0 if busy else timeout):
                    if key.data is not self:
                        clients.append((key, mask))
                    elif mask & selectors.EVENT_READ:
                        try:
                            data = self.channel.recv(_READ_BYTES)
                        except BlockingIOError:
                            data = None
                        if data == b"":
                            return 0  # the daemon is done with us
                        self._read(data or b"", inbox)
                # The daemon first: every message up to its last call (the
                # daemon waits for that answer), then more within TURN_SECONDS;
                # what they produced goes out before any client is served.
                if inbox:
                    self._some_messages(endpoint, inbox)
                    if not self._write_out():
                        return 0  # the daemon is gone
                core.new_turn()
                for key, mask in clients:
                    core.dispatch(key, mask)
                again = endpoint.idle()
                timeout = SWEEP_SECONDS if again is None else min(again, SWEEP_SECONDS)
                if not self._write_out():
                    return 0
                pending = self.out.out
                if bool(pending) != writing:
                    writing = bool(pending)
                    events = selectors.EVENT_READ | (selectors.EVENT_WRITE if writing else 0)
                    selector.modify(self.channel, events, self)
                now = time.monotonic()
                if now >= next_sweep:
                    next_sweep = now + SWEEP_SECONDS
                    core.sweep(now)
                    gc.freeze()  # see the module docstring
        finally:
            core.close()
            selector.close()

    def _read(self, data: bytes, inbox: collections.deque[tuple[Any, ...]]) -> None:
        """Queue the daemon's frames; a ping is answered at once (liveness is
        this loop turning, not the inbox being empty)."""
        for frame in self.frames.feed(data):
            tag = frame[0]
            if tag == _PING:
                self.out.out += encode((_PONG,))
                continue
            if tag == _CALL:
                self.calls_waiting += 1
            inbox.append(frame)

    def _write_out(self) -> bool:
        """Write what the socket takes of the queued frames; False if the daemon is gone."""
        pending = self.out.out
        if pending:
            try:
                sent = self.channel.send(pending)
            except BlockingIOError:
                sent = 0
            except OSError:
                return False
            del pending[:sent]
        return True

    def _some_messages(
        self, endpoint: ProcessEndpoint, inbox: collections.deque[tuple[Any, ...]]
    ) -> None:
        """Handle daemon messages: every one up to the last call read, then
        more for at most ``TURN_SECONDS`` (one at least), so that agents'
        requests are not kept waiting behind a burst of events."""
        deadline = time.monotonic() + TURN_SECONDS
        while inbox:
            frame = inbox.popleft()
            if frame[0] == _CALL:
                self.calls_waiting -= 1
            self._message(endpoint, frame)
            if not self.calls_waiting and time.monotonic() >= deadline:
                return

    def _message(self, endpoint: ProcessEndpoint, frame: tuple[Any, ...]) -> None:
        tag = frame[0]
        if tag == _GATE:
            self.gate.update(frame[1], frame[2])
        elif tag == _SEND:
            try:
                endpoint.receive(frame[1])
            except Exception:
                log.exception("process listener: handling a message failed")
        elif tag == _CALL:
            _, number, message = frame
            try:
                answer: tuple[bool, object] = (True, endpoint.receive(message))
            except Exception as error:
                log.exception("process listener: answering a call failed")
                answer = (False, f"{type(error).__name__}: {error}")
            endpoint.idle()  # what changed goes out before the answer
            self.out.out += encode((_REPLY, number, *answer))


def _renice(name: str, nice: int) -> None:
    """Run at ``nice`` if asked and allowed (lower needs CAP_SYS_NICE): the
    process and, where the kernel groups sessions (autogroup), its session."""
    if nice == 0:
        return
    try:
        os.setpriority(os.PRIO_PROCESS, 0, nice)
        if AUTOGROUP.exists():
            AUTOGROUP.write_text(str(nice))
    except OSError as error:
        log.info(
            "plugin endpoint %s: running at the default priority, not nice %d (%s; "
            "a lower nice needs CAP_SYS_NICE)",
            name,
            nice,
            error.strerror,
        )


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the daemon owns shutdown
    channel = socket.socket(fileno=int(arguments[0]))
    server = socket.socket(fileno=int(arguments[1]))
    try:
        return _Child(channel, server).run()
    except (EOFError, ConnectionError):
        return 0
    finally:
        with contextlib.suppress(OSError):
            channel.close()


if __name__ == "__main__":
    sys.exit(main())
