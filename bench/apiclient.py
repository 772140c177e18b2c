"""The harness's own thin client for the apiserver: raw JSON over aiohttp.

Independent of the scheduler's client on purpose (the observer must not share
the observed's bugs) and cheap: bodies are encoded and decoded with orjson,
never turned into generated models, because the harness shares the machine's
cores with the components it measures.

Contract: every non-watch call has a total timeout; an answer outside 2xx
raises ``ApiError`` with the server's message. A watch yields decoded events
until the server ends the stream.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp
import orjson

Obj = dict[str, Any]

REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=60)
WATCH_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=10)
LIST_PAGE = 500
_READ_BUFSIZE = 2**20  # watch lines are read whole; the default 64 KiB is tight
_JSON = "application/json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


class ApiError(RuntimeError):
    """The apiserver answered outside 2xx."""

    def __init__(self, status: int, method: str, path: str, body: bytes) -> None:
        super().__init__(f"{method} {path}: {status} {body[:300].decode(errors='replace')}")
        self.status = status


class Api:
    """Open with ``async with Api.connect(server, ca_file, token) as api``."""

    def __init__(self, session: aiohttp.ClientSession, server: str) -> None:
        self._session = session
        self._server = server

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(cls, server: str, ca_file: Path, token: str) -> AsyncIterator[Api]:
        context = ssl.create_default_context(cafile=str(ca_file))
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=context, limit=0),
            headers={"Authorization": f"Bearer {token}", "Accept": _JSON},
            read_bufsize=_READ_BUFSIZE,
        )
        async with session:
            yield cls(session, server)

    async def create(self, path: str, body: Obj) -> None:
        """POST ``body``; the created object is read and dropped."""
        await self._send("POST", path, body, _JSON)

    async def patch(self, path: str, body: Obj, content_type: str = STRATEGIC_MERGE_PATCH) -> None:
        """PATCH ``body`` (a strategic merge patch by default, as kubelets send);
        the patched object is read and dropped."""
        await self._send("PATCH", path, body, content_type)

    async def _send(self, method: str, path: str, body: Obj, content_type: str) -> None:
        async with self._session.request(
            method,
            self._server + path,
            data=orjson.dumps(body),
            headers={"Content-Type": content_type},
            timeout=REQUEST_TIMEOUT,
        ) as response:
            payload = await response.read()
            if not 200 <= response.status < 300:
                raise ApiError(response.status, method, path, payload)

    async def delete(self, path: str, grace_period_seconds: int | None = None) -> None:
        """DELETE the object at ``path`` (with ``gracePeriodSeconds`` if given)."""
        params = (
            {}
            if grace_period_seconds is None
            else {"gracePeriodSeconds": str(grace_period_seconds)}
        )
        async with self._session.delete(
            self._server + path, params=params, timeout=REQUEST_TIMEOUT
        ) as response:
            payload = await response.read()
            if not 200 <= response.status < 300:
                raise ApiError(response.status, "DELETE", path, payload)

    async def get(self, path: str, params: Mapping[str, str] | None = None) -> Obj:
        async with self._session.get(
            self._server + path, params=params, timeout=REQUEST_TIMEOUT
        ) as response:
            payload = await response.read()
            if response.status != 200:
                raise ApiError(response.status, "GET", path, payload)
        found: Obj = orjson.loads(payload)
        return found

    async def get_text(self, path: str) -> str:
        async with self._session.get(self._server + path, timeout=REQUEST_TIMEOUT) as response:
            payload = await response.read()
            if response.status != 200:
                raise ApiError(response.status, "GET", path, payload)
        return payload.decode()

    async def list_all(self, path: str, field_selector: str = "") -> tuple[list[Obj], str]:
        """Every item of a collection (paginated) and the list's resourceVersion."""
        items: list[Obj] = []
        selector = {"fieldSelector": field_selector} if field_selector else {}
        params = {"limit": str(LIST_PAGE), **selector}
        while True:
            page = await self.get(path, params)
            items.extend(page.get("items") or ())
            token = page["metadata"].get("continue")
            if not token:
                return items, str(page["metadata"]["resourceVersion"])
            params = {"limit": str(LIST_PAGE), "continue": token, **selector}

    async def watch(
        self, path: str, resource_version: str, timeout_seconds: int, field_selector: str = ""
    ) -> AsyncGenerator[Obj, None]:
        """Events ``{"type", "object"}`` from ``resource_version`` on, bookmarks included."""
        params = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout_seconds),
        }
        if field_selector:
            params["fieldSelector"] = field_selector
        async with self._session.get(
            self._server + path, params=params, timeout=WATCH_TIMEOUT
        ) as response:
            if response.status != 200:
                raise ApiError(response.status, "WATCH", path, await response.read())
            async for line in response.content:
                if line.strip():
                    event: Obj = orjson.loads(line)
                    yield event
