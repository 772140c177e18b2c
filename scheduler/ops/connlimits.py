"""Connection limits of the ops port, which aiohttp's server does not have:
a header-read timeout, a TLS handshake timeout and a cap on open connections.

``LimitedSite`` is an aiohttp site (it plugs into ``web.AppRunner`` like
``web.TCPSite``, so ``runner.addresses`` and ``runner.cleanup`` work as
before) whose listening socket creates each connection's aiohttp
``RequestHandler`` through ``_Guarded``, a protocol that delegates every
callback to it and adds:

- **header-read timeout** (``header_timeout``, default 32 s like upstream's
  ``ReadHeaderTimeout``): a connection whose first request header block
  (up to the blank line) has not arrived within it is closed. Later requests
  on a kept-alive connection are bounded by aiohttp's ``keepalive_timeout``
  (an idle connection waiting for the next header is closed after it);
- **connection cap** (``max_connections``): a connection beyond it is closed
  as soon as it is accepted, before any byte is read;
- **TLS handshake timeout** (``handshake_timeout``): asyncio's own
  ``ssl_handshake_timeout``.

Why a wrapping protocol rather than a ``RequestHandler`` subclass: the
handler's parsing state is private and changes between aiohttp releases;
the wrapper only sees the public ``asyncio.Protocol`` callbacks.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from scheduler.ops.defaults import (
    HANDSHAKE_TIMEOUT_SECONDS,
    HEADER_TIMEOUT_SECONDS,
    MAX_CONNECTIONS,
)

__all__ = ["HANDSHAKE_TIMEOUT_SECONDS", "HEADER_TIMEOUT_SECONDS", "MAX_CONNECTIONS", "Limits"]
_END_OF_HEADER = b"\r\n\r\n"


@dataclass(frozen=True)
class Limits:
    header_timeout: float = HEADER_TIMEOUT_SECONDS
    handshake_timeout: float = HANDSHAKE_TIMEOUT_SECONDS
    max_connections: int = MAX_CONNECTIONS


class _Counter:
    def __init__(self) -> None:
        self.open = 0


class _Guarded(asyncio.Protocol):
    def __init__(self, inner: asyncio.Protocol, limits: Limits, counter: _Counter) -> None:
        self._inner = inner
        self._limits = limits
        self._counter = counter
        self._counted = False
        self._timer: asyncio.TimerHandle | None = None
        self._tail = b""  # the last bytes seen, to find the header's end across reads

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        if self._counter.open >= self._limits.max_connections:
            transport.abort()
            return
        self._counter.open += 1
        self._counted = True
        self._timer = asyncio.get_running_loop().call_later(
            self._limits.header_timeout, transport.abort
        )
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self._timer is not None:
            seen = self._tail + data
            if _END_OF_HEADER in seen:
                self._timer.cancel()
                self._timer = None
            else:
                self._tail = seen[-(len(_END_OF_HEADER) - 1) :]
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._counted:
            return
        self._counted = False
        self._counter.open -= 1
        self._inner.connection_lost(exc)


class LimitedSite(web.BaseSite):
    def __init__(
        self,
        runner: web.BaseRunner,
        host: str,
        port: int,
        *,
        ssl_context: ssl.SSLContext | None,
        limits: Limits,
    ) -> None:
        super().__init__(runner, ssl_context=ssl_context)
        self._host = host
        self._port = port
        self._limits = limits
        self._counter = _Counter()

    @property
    def name(self) -> str:
        scheme = "https" if self._ssl_context else "http"
        return f"{scheme}://{self._host}:{self._port}"

    @property
    def open_connections(self) -> int:
        return self._counter.open

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        factory: Callable[[], asyncio.Protocol] = server
        limits, counter = self._limits, self._counter
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _Guarded(factory(), limits, counter),
            self._host,
            self._port,
            ssl=self._ssl_context,
            ssl_handshake_timeout=limits.handshake_timeout if self._ssl_context else None,
            reuse_address=True,
        )
