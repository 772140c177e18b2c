"""Errors raised by the API client, free of any HTTP library.

Callers catch exactly two families:
- ``ApiError``: the API server answered with a failure (an HTTP status outside
  2xx, or a watch ``ERROR`` event); ``status`` is the HTTP code from the
  ``Status`` body (410 for an expired resourceVersion, 409 for conflicts).
- ``TransportError``: no answer (connection refused or reset, TLS failure,
  request timeout); ``WatchTimeout`` is the watch-specific kind (a watch went
  silent for longer than the server was asked to keep it open).

Pure: importable by the informers without loading aiohttp.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HTTP_CONFLICT = 409
HTTP_GONE = 410
HTTP_NOT_FOUND = 404
HTTP_FORBIDDEN = 403
HTTP_TOO_MANY_REQUESTS = 429
HTTP_UNSUPPORTED_MEDIA_TYPE = 415
HTTP_INTERNAL_ERROR = 500


class ApiError(Exception):
    """The API server refused or failed a request."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message

    @classmethod
    def from_status(cls, body: Mapping[str, Any], http_status: int = 0) -> ApiError:
        """From a ``Status`` object (an error body or a watch ``ERROR`` event's object).

        The code in the body wins over the HTTP status: a watch ERROR event
        arrives inside a 200 response.
        """
        code = body.get("code")
        status = int(code) if isinstance(code, int) and code else http_status
        return cls(
            status=status,
            reason=str(body.get("reason") or ""),
            message=str(body.get("message") or ""),
        )

    @property
    def gone(self) -> bool:
        """The requested resourceVersion (or continue token) is too old: relist."""
        return self.status == HTTP_GONE or self.reason in ("Expired", "Gone")

    @property
    def retriable(self) -> bool:
        """Worth retrying unchanged later (throttled or a server-side failure)."""
        return self.status == HTTP_TOO_MANY_REQUESTS or self.status >= HTTP_INTERNAL_ERROR


class TransportError(Exception):
    """The request got no HTTP answer: connection, TLS or timeout failure."""


class WatchTimeout(TransportError):
    """A watch stream stayed silent past its server-side timeout plus a margin
    (a hung connection, kubernetes_asyncio issue #360 in spirit)."""
