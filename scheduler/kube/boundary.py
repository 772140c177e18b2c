"""``ClusterClient``: everything the engine calls on the API boundary.

``KubeClient`` implements it against a kube-apiserver;
``scheduler.simulate.memory.MemoryCluster`` implements it over in-memory
objects (``pyscheduler simulate``). The composition (``scheduler.engine.core``)
is typed against this protocol only, so the live daemon and the simulator
build the same informers, cache, queue and frameworks.

Contract (both implementations): failures raise
``scheduler.kube.errors.ApiError`` (an answer outside 2xx; 404 and 409 as
the API server gives them) or ``TransportError`` (no answer); objects are raw
JSON dicts that callers never mutate.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

from scheduler.kube.resources import ResourceType


class ClusterClient(Protocol):
    async def list(
        self,
        resource: ResourceType,
        *,
        resource_version: str | None = None,
        limit: int = 500,
        continue_: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> dict[str, Any]: ...

    def watch(
        self,
        resource: ResourceType,
        *,
        resource_version: str,
        timeout_seconds: int,
        allow_bookmarks: bool = True,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> AsyncIterator[dict[str, Any]]: ...

    async def bind(
        self, pod_namespace: str, pod_name: str, pod_uid: str, node_name: str
    ) -> None: ...

    async def patch_pod_status(
        self, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any]: ...

    async def create_event(self, namespace: str, event: Mapping[str, Any]) -> None: ...

    async def patch_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None: ...

    async def create_core_event(self, namespace: str, event: Mapping[str, Any]) -> None:
        """The core/v1 fallback when events.k8s.io is refused."""

    async def patch_core_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        """The core/v1 fallback when events.k8s.io is refused."""

    async def request(
        self, method: str, path: str, body: Any = None, content_type: str | None = None
    ) -> Any: ...

    async def close(self) -> None: ...
