"""Go-style durations (``time.ParseDuration``) as seconds.

Accepted: an optional sign, then one or more ``<number><unit>`` parts with
units ns, us (µs), ms, s, m, h, e.g. ``15s``, ``1m30s``, ``1.5h``; or a bare
``0``. Anything else, including a number without a unit or a value beyond
Go's ``time.Duration`` (int64 nanoseconds), is an error.
"""

from __future__ import annotations

import re

# Go's time.Duration is an int64 of nanoseconds (about 292 years either way);
# time.ParseDuration refuses anything beyond it.
MAX_DURATION_SECONDS = (2**63 - 1) / 1e9

_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Seconds in ``text``; ValueError naming the accepted form otherwise."""
    body = text[1:] if text[:1] in {"+", "-"} else text
    sign = -1.0 if text[:1] == "-" else 1.0
    if body == "0":
        return 0.0
    total, pos = 0.0, 0
    while pos < len(body):
        match = _PART.match(body, pos)
        if match is None:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if not body or pos != len(body):
        raise ValueError(
            f"invalid duration {text!r}: expected a number with a unit "
            "(ns, us, ms, s, m, h) such as '15s' or '1m30s'"
        )
    if total > MAX_DURATION_SECONDS:
        raise ValueError(
            f"invalid duration {text!r}: out of the range of Go's time.Duration (about 292 years)"
        )
    return sign * total


def format_duration(seconds: float) -> str:
    """Seconds written as a duration in messages: ``15s``, ``0.5s``."""
    return f"{seconds:g}s"
