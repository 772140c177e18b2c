"""The framework's ``ApiWriter`` (what plugins may write) over ``KubeClient``."""

from __future__ import annotations

from typing import Any, Protocol

from scheduler.framework.objects import Pod


class _BindingClient(Protocol):
    async def bind(
        self, pod_namespace: str, pod_name: str, pod_uid: str, node_name: str
    ) -> None: ...

    async def request(
        self, method: str, path: str, body: Any = None, content_type: str | None = None
    ) -> Any: ...


class KubeApiWriter:
    """Binds with the pod's uid as precondition; ``request`` keeps the client's
    default CRITICAL priority (plugins call it from PreBind)."""

    def __init__(self, client: _BindingClient) -> None:
        self._client = client

    async def bind(self, pod: Pod, node_name: str) -> None:
        await self._client.bind(pod.namespace, pod.name, pod.uid, node_name)

    async def request(
        self, method: str, path: str, body: Any = None, content_type: str | None = None
    ) -> Any:
        return await self._client.request(method, path, body, content_type)
