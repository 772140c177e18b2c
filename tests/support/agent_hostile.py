"""Hostile agent-port clients in a process of their own (no GIL taken from
the test or the scheduler under test):
``python -m tests.support.agent_hostile <port> <pipeliners> <slow> <garbage>``.

Three kinds, all at once, until stdin ends; each line read on stdin
(``report``) is answered with one JSON line of counters on stdout:

- ``pipeliners`` connections pipeline agent requests (for a pod that does
  not exist: 404s, nothing changes) and never read an answer. ``pipelined``
  counts the bytes the server took; once a send would block for a second
  the connection counts as ``stalled`` (the server stopped reading it:
  back-pressure), ``pipeliners_closed`` when the server closed it;
- ``slow`` connections send a request head one byte a second and never
  finish it (slow-loris); one the server closes is counted
  (``slow_closed``) and opened again;
- ``garbage`` clients send a malformed request (Unicode or 5000-digit
  Content-Length, bad request lines, binary, an oversized head,
  Transfer-Encoding, HTTP/9.9), read the answer and connect again (after
  ``GARBAGE_PAUSE_SECONDS``); answers
  are counted by status code (``garbage_answers``), closes without one
  (``garbage_unanswered``).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import socket
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

_BODY = (
    b'{"protoVersion": 2, "pod": {"namespace": "hostile", "name": "nobody"},'
    b' "resources": {"vCPUs": 1, "mem": 1}, "metrics": null}'
)
_REQUEST = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(_BODY), _BODY)
_PIPELINE = _REQUEST * 256
_SLOW_HEAD = b"POST / HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4096
GARBAGE = (
    b"POST / HTTP/1.1\r\nContent-Length: \xc2\xb2\r\n\r\n",
    b"POST / HTTP/1.1\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n",
    b"GARBAGE\r\n\r\n",
    b"\x00\xff\xfe" * 200 + b"\r\n\r\n",
    b"POST / HTTP/9.9\r\n\r\n",
    b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"GET / HTTP/1.1\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n",
    b"POST /\x7f HTTP/1.1\r\n\r\n",
    b"POST / HTTP/1.1\r\nBad Header\r\n\r\n",
)


PIPE_BUFFER_BYTES = 64 << 10
GARBAGE_PAUSE_SECONDS = 0.02  # per garbage client between requests


@dataclass
class Counters:
    pipelined: int = 0
    pipeliners_closed: int = 0
    slow_open: int = 0
    slow_closed: int = 0
    garbage_answers: Counter[str] = field(default_factory=Counter)
    garbage_unanswered: int = 0


class Hostile:
    def __init__(self, port: int, pipeliners: int, slow: int, garbage: int) -> None:
        self.port = port
        self.selector = selectors.DefaultSelector()
        self.counters = Counters()
        self.progress: dict[socket.socket, float] = {}  # pipeliner -> its last send
        self.stalled: set[socket.socket] = set()
        self.slow: dict[socket.socket, int] = {}  # bytes of the head sent
        self.garbage: dict[socket.socket, bytearray] = {}
        self.next_garbage = 0
        self.reopen: list[float] = []  # when the next garbage clients connect again
        for _ in range(pipeliners):
            self._open("pipe")
        for _ in range(slow):
            self._open("slow")
        for _ in range(garbage):
            self._open("garbage")

    def _connect(self) -> socket.socket | None:
        try:
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        except OSError:
            return None
        sock.setblocking(False)
        return sock

    def _open(self, kind: str) -> None:
        sock = self._connect()
        if sock is None:
            return
        if kind == "pipe":
            # Small buffers: the server's back-pressure shows after a few MiB
            # per connection instead of the loopback's autotuned tens.
            for option in (socket.SO_SNDBUF, socket.SO_RCVBUF):
                sock.setsockopt(socket.SOL_SOCKET, option, PIPE_BUFFER_BYTES)
            self.progress[sock] = time.monotonic()
            self.selector.register(sock, selectors.EVENT_WRITE, "pipe")
        elif kind == "slow":
            self.slow[sock] = 0
            self.counters.slow_open += 1
            self.selector.register(sock, selectors.EVENT_READ, "slow")
        else:
            index = self.next_garbage % len(GARBAGE)
            self.next_garbage += 1
            with contextlib.suppress(OSError):
                sock.sendall(GARBAGE[index])
            self.garbage[sock] = bytearray()
            self.selector.register(sock, selectors.EVENT_READ, "garbage")

    def _close(self, sock: socket.socket) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(sock)
        sock.close()

    def _pipe(self, sock: socket.socket, now: float) -> None:
        try:
            sent = sock.send(_PIPELINE)
        except BlockingIOError:
            sent = 0
        except OSError:
            self.counters.pipeliners_closed += 1
            self.stalled.discard(sock)
            self.progress.pop(sock, None)
            self._close(sock)
            self._open("pipe")
            return
        if sent:
            self.counters.pipelined += sent
            self.progress[sock] = now
            self.stalled.discard(sock)

    def _check_stalls(self, now: float) -> None:
        """A pipeliner the server has taken nothing from for a second is stalled."""
        self.stalled = {sock for sock, last in self.progress.items() if now - last >= 1.0}

    def _readable(self, sock: socket.socket, kind: str) -> None:
        try:
            data = sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if kind == "slow":
            if not data:  # the server closed it: a new one
                self.counters.slow_closed += 1
                del self.slow[sock]
                self._close(sock)
                self._open("slow")
            return
        got = self.garbage[sock]
        got += data
        if data and b"\r\n" not in got:
            return
        line = bytes(got).split(b"\r\n", 1)[0]
        if line.startswith(b"HTTP/1.1 "):
            self.counters.garbage_answers[line[9:12].decode()] += 1
        else:
            self.counters.garbage_unanswered += 1
        del self.garbage[sock]
        self._close(sock)
        self.reopen.append(time.monotonic() + GARBAGE_PAUSE_SECONDS)

    def _drip(self) -> None:
        """One more byte of every slow head (never the end of it)."""
        for sock, offset in list(self.slow.items()):
            if offset >= len(_SLOW_HEAD):
                continue
            try:
                sock.send(_SLOW_HEAD[offset : offset + 1])
            except OSError:
                continue
            self.slow[sock] = offset + 1

    def report(self) -> str:
        counters = self.counters
        return json.dumps(
            {
                "pipelined": counters.pipelined,
                "stalled": len(self.stalled),
                "pipeliners_closed": counters.pipeliners_closed,
                "slow_open": len(self.slow),
                "slow_opened": counters.slow_open,
                "slow_closed": counters.slow_closed,
                "garbage_answers": dict(counters.garbage_answers),
                "garbage_unanswered": counters.garbage_unanswered,
            }
        )

    def run(self) -> int:
        self.selector.register(sys.stdin, selectors.EVENT_READ, "stdin")
        next_drip = time.monotonic()
        while True:
            now = time.monotonic()
            if now >= next_drip:
                self._drip()
                next_drip = now + 1.0
            for key, _ in self.selector.select(min(0.2, max(0.0, next_drip - now))):
                kind, sock = key.data, key.fileobj
                if kind == "stdin":
                    if not sys.stdin.readline():
                        return 0
                    print(self.report(), flush=True)
                elif kind == "pipe":
                    assert isinstance(sock, socket.socket)
                    self._pipe(sock, time.monotonic())
                else:
                    assert isinstance(sock, socket.socket)
                    self._readable(sock, kind)
            due = [when for when in self.reopen if when <= time.monotonic()]
            self.reopen = [when for when in self.reopen if when > time.monotonic()]
            for _ in due:
                self._open("garbage")
            self._check_stalls(time.monotonic())


def main(argv: list[str]) -> int:
    os.nice(10)  # competes with the scheduler, not ahead of it
    port, pipeliners, slow, garbage = (int(arg) for arg in argv[:4])
    return Hostile(port, pipeliners, slow, garbage).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
