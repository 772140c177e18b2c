"""What an informer needs from the API client: paginated lists and watches.

``scheduler.kube.client.KubeClient`` implements this; tests use a scripted
fake. Failures are ``scheduler.kube.errors.ApiError`` (``.gone`` for 410) and
``TransportError`` (including ``WatchTimeout`` for a silent watch, which the
client enforces). Objects and events are raw JSON dicts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol

from scheduler.kube.resources import ResourceType


class ListWatchClient(Protocol):
    async def list(
        self,
        resource: ResourceType,
        *,
        resource_version: str | None = None,
        limit: int = 500,
        continue_: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> dict[str, Any]:
        """One page: ``{"metadata": {"resourceVersion", "continue"?}, "items": [...]}``."""

    def watch(
        self,
        resource: ResourceType,
        *,
        resource_version: str,
        timeout_seconds: int,
        allow_bookmarks: bool = True,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """Events ``{"type", "object"}`` until the server ends the stream."""
