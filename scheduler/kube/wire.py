"""Sans-I/O halves of the API protocol: what goes on the wire and how to read it.

Plain functions and one small buffer class, unit-tested without a server; the
HTTP client (``client.py``) only moves bytes. JSON is (de)serialised with
orjson into plain dicts: no generated models anywhere.

Invariants:
- A watch stream is newline-delimited JSON; ``LineSplitter`` returns only
  complete lines and keeps the partial tail for the next chunk.
- Every watch line parses to ``{"type": str, "object": dict}`` or raises
  ``MalformedResponse`` (a ``TransportError``: the stream is unusable, reconnect).
"""

from __future__ import annotations

import enum
from typing import Any

import orjson

from scheduler.kube.errors import ApiError, TransportError
from scheduler.kube.protobuf import decode_status

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"

# Far above the largest object etcd stores (1.5 MiB by default) wrapped in an event.
MAX_WATCH_LINE_BYTES = 16 * 1024 * 1024


class WatchEventType(enum.StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"
    BOOKMARK = "BOOKMARK"
    ERROR = "ERROR"


class MalformedResponse(TransportError):
    """The server's bytes were not what the protocol promises."""


class LineSplitter:
    """Reassembles newline-terminated lines from arbitrary chunks."""

    __slots__ = ("_max", "_tail")

    def __init__(self, max_line_bytes: int = MAX_WATCH_LINE_BYTES) -> None:
        self._tail = b""
        self._max = max_line_bytes

    def feed(self, chunk: bytes) -> list[bytes]:
        """Complete lines in ``chunk`` (with what was held back), without the newline.
        Blank lines are dropped."""
        data = self._tail + chunk if self._tail else chunk
        *lines, self._tail = data.split(b"\n")
        if len(self._tail) > self._max:
            raise MalformedResponse(f"watch line longer than {self._max} bytes")
        return [line for line in lines if line.strip()]

    @property
    def pending(self) -> bytes:
        """An incomplete last line (non-empty only if the stream ended mid-line)."""
        return self._tail


def parse_watch_line(line: bytes) -> dict[str, Any]:
    """One watch event as a raw dict ``{"type": ..., "object": {...}}``."""
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError as err:
        raise MalformedResponse(f"watch line is not JSON: {line[:200]!r}") from err
    if (
        not isinstance(event, dict)
        or not isinstance(event.get("type"), str)
        or not isinstance(event.get("object"), dict)
    ):
        raise MalformedResponse(f"watch line is not an event: {line[:200]!r}")
    return event


def decode_json(body: bytes) -> Any:
    """A response body as plain Python values; an empty body is None."""
    if not body:
        return None
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as err:
        raise MalformedResponse(f"response is not JSON: {body[:200]!r}") from err


def encode_json(body: Any) -> bytes:
    """A request body; bytes and str pass through unchanged (already encoded)."""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return orjson.dumps(body)


def error_from_response(http_status: int, body: bytes) -> ApiError:
    """An ``ApiError`` from a failed response, using its ``Status`` body when there is one."""
    try:
        decoded = decode_status(body) or (orjson.loads(body) if body else None)
    except orjson.JSONDecodeError:
        decoded = None
    if isinstance(decoded, dict) and decoded.get("kind") == "Status":
        return ApiError.from_status(decoded, http_status)
    text = body[:500].decode(errors="replace").strip()
    return ApiError(http_status, _reason_for(http_status), text)


def _reason_for(http_status: int) -> str:
    return {
        400: "BadRequest",
        401: "Unauthorized",
        403: "Forbidden",
        404: "NotFound",
        405: "MethodNotAllowed",
        409: "Conflict",
        410: "Gone",
        422: "Invalid",
        429: "TooManyRequests",
        500: "InternalError",
        503: "ServiceUnavailable",
        504: "Timeout",
    }.get(http_status, "Unknown")


def list_query(
    *,
    resource_version: str | None,
    limit: int,
    continue_: str | None,
    label_selector: str | None,
    field_selector: str | None,
) -> dict[str, str]:
    query: dict[str, str] = {}
    if limit > 0:
        query["limit"] = str(limit)
    # A continue token carries its own snapshot; resourceVersion must then be unset.
    if continue_:
        query["continue"] = continue_
    elif resource_version is not None:
        query["resourceVersion"] = resource_version
    if label_selector:
        query["labelSelector"] = label_selector
    if field_selector:
        query["fieldSelector"] = field_selector
    return query


def watch_query(
    *,
    resource_version: str,
    timeout_seconds: int,
    allow_bookmarks: bool,
    label_selector: str | None = None,
    field_selector: str | None = None,
) -> dict[str, str]:
    query = {
        "watch": "true",
        "resourceVersion": resource_version,
        "timeoutSeconds": str(timeout_seconds),
    }
    if allow_bookmarks:
        query["allowWatchBookmarks"] = "true"
    if label_selector:
        query["labelSelector"] = label_selector
    if field_selector:
        query["fieldSelector"] = field_selector
    return query


def binding_body(pod_namespace: str, pod_name: str, pod_uid: str, node_name: str) -> dict[str, Any]:
    """A ``v1.Binding``; the uid makes the API server refuse a pod that was
    deleted and recreated under the same name (409 Conflict)."""
    metadata: dict[str, Any] = {"name": pod_name, "namespace": pod_namespace}
    if pod_uid:
        metadata["uid"] = pod_uid
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": metadata,
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }
