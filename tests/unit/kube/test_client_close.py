"""``KubeClient.close()`` leaves no socket open, even for a TLS connection a
watch abandoned mid-stream whose peer never answers the TLS close_notify.

Such a connection is closed gracefully when the watch is released (the
transport sends close_notify and keeps the socket until the peer's reply),
and the connector forgets it; without ``close()`` aborting it, the socket
outlives the client and, once the event loop is gone, is reported as an
"unclosed transport" ResourceWarning (the CI flake after test_app_lifecycle).
The peer here is a blocking TLS server in a thread that sends one watch
event and then never reads again, so the leak happens on every run."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Iterator

import orjson
import pytest

from scheduler.kube.client import KubeClient
from scheduler.kube.connection import Connection
from scheduler.kube.resources import PODS
from scheduler.ops.tls import serving_context
from tests.support.sockets import can_count, open_sockets, socket_id

pytestmark = pytest.mark.skipif(not can_count(), reason="needs /proc")


class SilentTlsPeer:
    """Accepts one TLS connection, answers its watch with one event, then
    neither reads nor closes until ``release``: a close_notify gets no reply."""

    def __init__(self) -> None:
        self._context = serving_context(None, None, time.time())
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.own = {socket_id(self._listener)}
        self._release = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="silent-tls-peer", daemon=True)

    def __enter__(self) -> SilentTlsPeer:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._release.set()
        self._thread.join(10)
        self._listener.close()

    def _serve(self) -> None:
        raw, _ = self._listener.accept()
        self.own.add(socket_id(raw))
        with self._context.wrap_socket(raw, server_side=True) as conn:
            request = b""
            while b"\r\n\r\n" not in request:
                request += conn.recv(65536)
            event = orjson.dumps({"type": "ADDED", "object": {"metadata": {"name": "p"}}})
            line = event + b"\n"
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n"
                + f"{len(line):x}\r\n".encode()
                + line
                + b"\r\n"
            )
            self._release.wait()


@pytest.fixture
def peer() -> Iterator[SilentTlsPeer]:
    with SilentTlsPeer() as running:
        yield running


async def test_close_leaves_no_socket_of_an_abandoned_tls_watch(peer: SilentTlsPeer) -> None:
    async def authorization() -> None:
        return None

    client_context = ssl.create_default_context()
    client_context.check_hostname = False
    client_context.verify_mode = ssl.CERT_NONE
    before = open_sockets()
    client = KubeClient.open(
        Connection(f"https://127.0.0.1:{peer.port}", client_context, authorization),
        qps=0,
        burst=0,
        user_agent="close-test",
    )
    stream = client.watch(PODS, resource_version="1", timeout_seconds=60)
    async with contextlib.aclosing(stream):
        first = await anext(stream)
    assert first["type"] == "ADDED"

    await client.close()

    leaked = open_sockets() - before - peer.own
    assert leaked == set(), f"sockets still open after close(): {leaked}"
