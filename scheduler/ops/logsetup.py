"""Process logging: stdlib ``logging`` with JSON lines or readable text.

``configure_logging`` installs one handler on the root logger. Every record
carries ``ts`` (UTC, RFC 3339 with milliseconds), ``level``, ``logger``, ``msg``
and the structured fields passed as ``extra={...}``; JSON mode writes one
object per line (orjson), text mode writes ``ts LEVEL logger: msg key=value``.

Invariants:
- The only state touched is the root logger's level and the one handler this
  module installs; calling again replaces that handler (idempotent) and leaves
  handlers installed by others (e.g. pytest's capture) alone.
- Extra fields never overwrite the core fields: a clashing extra is written
  under ``extra.<name>``. Values orjson cannot encode are written as ``str``.
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

import orjson

# Attributes every LogRecord has; anything else on a record came from ``extra``.
_RECORD_ATTRS = frozenset(
    vars(logging.LogRecord("", logging.INFO, "", 0, "", None, None)).keys()
    | {"message", "asctime", "taskName"}
)
_CORE = ("ts", "level", "logger", "msg")


def _timestamp(record: logging.LogRecord) -> str:
    moment = datetime.fromtimestamp(record.created, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    extras: dict[str, Any] = {}
    for key, value in vars(record).items():
        if key in _RECORD_ATTRS or key.startswith("_"):
            continue
        extras[f"extra.{key}" if key in _CORE else key] = value
    return extras


class JsonFormatter(logging.Formatter):
    """One JSON object per record: core fields, extras, then ``exc``/``stack``."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": _timestamp(record),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update(_extras(record))
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        try:
            return orjson.dumps(entry, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
        except orjson.JSONEncodeError:
            # e.g. an integer beyond 64 bits, which ``default`` never sees
            safe = {k: v if k in _CORE else str(v) for k, v in entry.items()}
            return orjson.dumps(safe).decode()


def _logfmt_value(value: Any) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value, default=str).decode()
    if text and not any(c in text for c in ' ="\n'):
        return text
    return orjson.dumps(text).decode()


class TextFormatter(logging.Formatter):
    """``ts LEVEL logger: msg key=value ...`` followed by any traceback."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"{_timestamp(record)} {record.levelname:<7} {record.name}: {record.getMessage()}"
        fields = " ".join(f"{k}={_logfmt_value(v)}" for k, v in _extras(record).items())
        if fields:
            line = f"{line} {fields}"
        if record.exc_info:
            line = f"{line}\n{self.formatException(record.exc_info)}"
        if record.stack_info:
            line = f"{line}\n{self.formatStack(record.stack_info)}"
        return line


class _OwnedHandler(logging.StreamHandler[TextIO]):
    """Marks the handler ``configure_logging`` installed, so a second call replaces it."""


def parse_level(level: str) -> int:
    """``"debug"``/``"INFO"``/``"warning"``... to a logging level number."""
    number = logging.getLevelNamesMapping().get(level.strip().upper())
    if number is None:
        raise ValueError(f"unknown log level {level!r}")
    return number


def configure_logging(level: str, json: bool, stream: TextIO | None = None) -> None:
    """Send every record at ``level`` or above to ``stream`` (stderr by default)."""
    root = logging.getLogger()
    number = parse_level(level)
    handler = _OwnedHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if json else TextFormatter())
    for existing in [h for h in root.handlers if isinstance(h, _OwnedHandler)]:
        root.removeHandler(existing)
        existing.close()
    root.addHandler(handler)
    root.setLevel(number)
