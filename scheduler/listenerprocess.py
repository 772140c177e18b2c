"""Plugin listeners served by a child process (``PluginHttp.listen_process``).

Why a process: a listener thread shares the daemon's GIL, and on a saturated
machine the OS preempts the CPU-bound scheduling loop while it holds the GIL,
for up to tens of milliseconds; the listener then waits with it (measured:
agent p99 10 ms while scheduling, 0.6 ms for the same server in a process of
its own; ARCHITECTURE.md, AutoscaleEnforcer). A child process has its own GIL.

Daemon side, ``ProcessListener`` (the ``ProcessChannel`` a plugin holds):
- ``start`` (the ops server's, on the daemon's loop) binds the port in the
  daemon (a bind error fails start-up there), spawns
  ``python -m scheduler.listenerprocess <channel fd> <socket fd>`` with both
  descriptors, sends the boot message (factory, name, body limit, logging)
  and waits for the child's ``ready`` (or its ``failed`` with the traceback);
- ``send`` queues a frame and writes what the socket takes; the rest is
  written when it is writable (the loop's writer): it never blocks;
- ``call`` writes and then blocks (``poll``) until its answer, delivering to
  ``on_message`` every message the child sent before it, in order; a timeout,
  the child's exception or its death raise ``ChannelError``;
- messages between calls are read by the loop's reader and delivered in order;
- ``update_gate`` forwards the daemon's gate (synced, leading, shutting down)
  when it changes; the child answers 503 with the reason meanwhile;
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
socket, its connections (``scheduler.listener.HttpCore``) and the channel.
Daemon messages are handled in arrival order, first in each loop turn (a
call blocks the scheduling loop) but for at most ``TURN_SECONDS``, then the
clients' requests of that turn, so HTTP requests interleave with a burst of
messages; after each turn ``ProcessEndpoint.idle`` runs and the queued frames
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
    ChannelError,
    HttpRequest,
    HttpResponse,
    ProcessEndpoint,
)
from scheduler.listener import SWEEP_SECONDS, HttpCore, bind
from scheduler.logsetup import JsonFormatter, configure_logging

log = logging.getLogger(__name__)

READY_SECONDS = 60.0  # the child's imports and the factory, on a loaded machine
STOP_SECONDS = 5.0
# How long the child handles daemon messages before it looks at its clients
# again (a burst of informer events must not hold up their requests).
TURN_SECONDS = 0.0003
NOT_STARTED = "not ready: informers syncing or plugins starting"
_READ_BYTES = 65536
AUTOGROUP = Path("/proc/self/autogroup")
_HEADER = struct.Struct("!I")

# Frame tags. Daemon to child: boot, gate, send, call. Child to daemon:
# ready, failed, send, reply.
_BOOT, _GATE, _SEND, _CALL = "boot", "gate", "send", "call"
_READY, _FAILED, _REPLY = "ready", "failed", "reply"

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
    ) -> None:
        self.name = name
        self.nice = nice
        self.port = port
        self.factory = factory
        self.max_body_bytes = max(max_body_bytes, 0)
        self.leader_only = leader_only
        self._on_message = on_message
        self._out = bytearray()  # frames not yet written (once started)
        self._frames = Frames()
        self._next_call = 0
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

    async def wait_lost(self) -> str:
        if self._lost is None:
            await asyncio.Event().wait()  # inline mode: never lost
        assert self._lost is not None
        return await self._lost

    def handle_inline(self, request: HttpRequest) -> HttpResponse:
        """Answer an HTTP request with the in-process endpoint (inline mode)."""
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
        loop = self._loop = asyncio.get_running_loop()
        server = bind(host, self.port)
        ours, theirs = socket.socketpair()
        try:
            self.port = int(server.getsockname()[1])
            environment = dict(os.environ)
            environment["PYTHONPATH"] = os.pathsep.join(sys.path)
            self._process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "scheduler.listenerprocess",
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
            server.close()
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
                    self._gate,
                    self.nice,
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

    def update_gate(self, reason: str | None) -> None:
        """The daemon's gate for this listener now (None: serve)."""
        if reason == self._gate:
            return
        self._gate = reason
        if self._process is not None:
            self._queue(encode((_GATE, reason)))

    async def stop(self) -> None:
        """Close the channel, wait for the child (kill it if it lingers); idempotent."""
        process, sock, loop = self._process, self._sock, self._loop
        if process is None or self._stopping:
            return
        self._stopping = True
        if sock is not None and loop is not None:
            loop.remove_reader(sock)
            loop.remove_writer(sock)
            sock.close()
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
            # the answer to a call that timed out: nobody waits for it
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
        self.gate: str | None = NOT_STARTED

    def run(self) -> int:
        early = _read_frame(self.channel, self.frames)
        tag, boot = early[0]
        if tag != _BOOT:
            raise RuntimeError(f"expected the boot message, got {tag!r}")
        factory, name, max_body_bytes, level, json_logs, gate, nice = boot
        self.gate = gate
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
            self._message(endpoint, message)
        return self._serve(endpoint, name, max_body_bytes)

    def _serve(self, endpoint: ProcessEndpoint, name: str, max_body_bytes: int) -> int:
        selector = selectors.DefaultSelector()
        core = HttpCore(
            name,
            endpoint.handle,
            max_body_bytes=max_body_bytes,
            gate=lambda: self.gate,
            selector=selector,
            server=self.server,
        )
        self.channel.setblocking(False)
        selector.register(self.channel, selectors.EVENT_READ, self)
        writing = False
        next_sweep = time.monotonic() + SWEEP_SECONDS
        inbox: collections.deque[bytes] = collections.deque()
        timeout = SWEEP_SECONDS
        try:
            while True:
                clients = []
                for key, mask in selector.select(0 if inbox else timeout):
                    if key.data is not self:
                        clients.append((key, mask))
                    elif mask & selectors.EVENT_READ:
                        try:
                            data = self.channel.recv(_READ_BYTES)
                        except BlockingIOError:
                            data = None
                        if data == b"":
                            return 0  # the daemon is done with us
                        inbox.extend(self.frames.feed_raw(data or b""))
                # The daemon first (bounded by TURN_SECONDS): its calls block
                # the scheduling loop, an agent waits at most one budget more.
                if inbox:
                    self._some_messages(endpoint, inbox)
                for key, mask in clients:
                    core.dispatch(key, mask)
                again = endpoint.idle()
                timeout = SWEEP_SECONDS if again is None else min(again, SWEEP_SECONDS)
                pending = self.out.out
                if pending:
                    try:
                        sent = self.channel.send(pending)
                    except BlockingIOError:
                        sent = 0
                    except OSError:
                        return 0  # the daemon is gone
                    del pending[:sent]
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

    def _some_messages(self, endpoint: ProcessEndpoint, inbox: collections.deque[bytes]) -> None:
        """Handle daemon messages for at most ``TURN_SECONDS`` (one at least),
        so that agents' requests are not kept waiting behind a burst."""
        deadline = time.monotonic() + TURN_SECONDS
        while inbox:
            self._message(endpoint, pickle.loads(inbox.popleft()))
            if time.monotonic() >= deadline:
                return

    def _message(self, endpoint: ProcessEndpoint, frame: tuple[Any, ...]) -> None:
        tag = frame[0]
        if tag == _GATE:
            self.gate = frame[1]
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
