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
    """Seconds written as Go's ``time.Duration.String`` writes them, in
    messages and in the configuration written back: ``15s``, ``1m0s``,
    ``10m0s``, ``1h0m0s``, ``1.5s``, ``500ms``, ``0s``."""
    nanos = round(seconds * 1e9)
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos < 1_000:
        return f"{sign}{nanos}ns"
    if nanos < 1_000_000:
        return f"{sign}{_decimal(nanos, 3)}\u00b5s"
    if nanos < 1_000_000_000:
        return f"{sign}{_decimal(nanos, 6)}ms"
    whole, fraction = divmod(nanos, 1_000_000_000)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    text = _decimal(secs * 1_000_000_000 + fraction, 9) + "s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def _decimal(value: int, digits: int) -> str:
    """``value / 10**digits`` without trailing zeros: 1500, 3 -> ``1.5``."""
    whole, fraction = divmod(value, 10**digits)
    tail = f"{fraction:0{digits}d}".rstrip("0")
    return f"{whole}.{tail}" if tail else str(whole)
