"""A hostile agent-port client in a process of its own (so it takes no GIL
from the test): ``python -m tests.support.agent_flood <port> <body>``.

Commands on stdin, one per line: ``on`` starts flooding, ``off`` stops it;
each is acknowledged on stdout (``on`` once the first answers came back, so
the server is busy with the flood; ``off`` once every answer was read, so it
is quiet again). While on, every ``PERIOD`` it pipelines ``BURST`` requests on
each of ``CONNECTIONS`` connections in one write, then reads every answer.
"""

from __future__ import annotations

import os
import selectors
import socket
import sys
import time

CONNECTIONS = 4
BURST = 200
PERIOD = float(os.environ.get("AGENT_FLOOD_PERIOD", "0.01"))
_STATUS = b"HTTP/1.1 "


def _request(body: bytes) -> bytes:
    head = f"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


def _burst(connections: list[socket.socket], payload: bytes) -> None:
    """Send a burst on every connection and read all its answers."""
    for connection in connections:
        connection.sendall(payload)
    for connection in connections:
        seen, tail = 0, b""
        while seen < BURST:
            data = connection.recv(1 << 20)
            if not data:
                raise ConnectionError("the server closed a flood connection")
            chunk = tail + data
            seen += chunk.count(_STATUS)
            tail = chunk[-(len(_STATUS) - 1) :]


def main(argv: list[str]) -> int:
    os.nice(19)  # the flood competes for a CPU with the one it floods, not with the test
    port, body = int(argv[0]), argv[1].encode()
    payload = _request(body) * BURST
    connections = [socket.create_connection(("127.0.0.1", port)) for _ in range(CONNECTIONS)]
    selector = selectors.DefaultSelector()
    selector.register(sys.stdin, selectors.EVENT_READ)
    flooding = False
    next_burst = time.monotonic()
    while True:
        timeout = max(0.0, next_burst - time.monotonic()) if flooding else None
        if selector.select(timeout):
            line = sys.stdin.readline().strip()
            if not line:
                return 0
            if line == "on":
                _burst(connections, payload)
                flooding, next_burst = True, time.monotonic() + PERIOD
            else:
                flooding = False
            print(line, flush=True)
            continue
        _burst(connections, payload)
        next_burst += PERIOD
        if next_burst < time.monotonic():
            next_burst = time.monotonic() + PERIOD


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
