"""The Lease client: the protocol the elector talks to, and its adapter over
a generic ``request(method, path, body, content_type)`` coroutine."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Protocol

from scheduler.kube.errors import HTTP_CONFLICT, HTTP_NOT_FOUND
from scheduler.kube.resources import LEASES
from scheduler.kube.wire import JSON
from scheduler.leaderelection.core import LeaseConflict


class LeaseClient(Protocol):
    async def get(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    async def create(self, namespace: str, lease: dict[str, Any]) -> dict[str, Any]: ...

    async def replace(self, namespace: str, name: str, lease: dict[str, Any]) -> dict[str, Any]: ...


class RequestFn(Protocol):
    """``KubeClient.request``: raises an error with ``.status`` on a non-2xx answer."""

    def __call__(
        self, method: str, path: str, body: Any = None, content_type: str | None = None
    ) -> Awaitable[Any]: ...


def _status(error: Exception) -> int | None:
    status = getattr(error, "status", None)
    return status if isinstance(status, int) else None


class ApiLeaseClient:
    """``LeaseClient`` over a request coroutine, so this module needs no HTTP client."""

    def __init__(self, request: RequestFn) -> None:
        self._request = request

    async def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            lease: dict[str, Any] = await self._request("GET", LEASES.object_path(name, namespace))
        except Exception as error:
            if _status(error) == HTTP_NOT_FOUND:
                return None
            raise
        return lease

    async def create(self, namespace: str, lease: dict[str, Any]) -> dict[str, Any]:
        return await self._write("POST", LEASES.collection_path(namespace), lease)

    async def replace(self, namespace: str, name: str, lease: dict[str, Any]) -> dict[str, Any]:
        return await self._write("PUT", LEASES.object_path(name, namespace), lease)

    async def _write(self, method: str, path: str, lease: dict[str, Any]) -> dict[str, Any]:
        try:
            answer: dict[str, Any] = await self._request(method, path, lease, JSON)
        except Exception as error:
            if _status(error) == HTTP_CONFLICT:
                raise LeaseConflict(str(error)) from error
            raise
        return answer
