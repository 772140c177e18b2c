"""The Kubernetes Quantity and Semver CEL libraries, for the DRA selector adapter.

The CEL runtime (cel-cpp through ``cel_expr_python``) accepts only JSON-like
values, so a Quantity or a Semver travels through CEL as a *tagged map*:
``{QUANTITY_TAG: "<exact decimal>"}`` or ``{SEMVER_TAG: "<major.minor.patch[-pre]>"}``.
Both tags hold a canonical form, so CEL's own map equality gives the
library's ``==``: ``quantity("1Gi") == quantity("1024Mi")`` and
``semver("1.2.3+build") == semver("1.2.3")`` are true, as upstream.

Each function below is the Python implementation of one CEL overload; the
adapter (``cel.py``) declares them. A wrong argument raises ``ValueError``,
which the runtime turns into a CEL error value, as a Go overload returning
``types.NewErr`` does upstream (``k8s.io/apiserver/pkg/cel/library``).
Pure: no state.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from scheduler.framework import QuantityError, parse_quantity

QUANTITY_TAG = "__k8s_quantity__"
SEMVER_TAG = "__k8s_semver__"
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

# Semantic Versioning 2.0.0: no leading zeros, optional pre-release and build.
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
_LOOSE = re.compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(.*)$")


# ------------------------------------------------------------------ quantity
def quantity_value(value: Decimal) -> dict[str, str]:
    """The tagged CEL form of an exact quantity."""
    text = format(value.normalize(), "f") if value else "0"
    return {QUANTITY_TAG: text}


def _decimal(value: Any) -> Decimal:
    if isinstance(value, Mapping) and QUANTITY_TAG in value:
        return Decimal(value[QUANTITY_TAG])
    raise ValueError("no such overload: argument is not a Quantity")


def quantity(text: str) -> dict[str, str]:
    try:
        return quantity_value(parse_quantity(text))
    except QuantityError as error:
        raise ValueError(f"quantities must match the regular expression: {error}") from None


def is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def sign(value: Any) -> int:
    if SEMVER_TAG in value:
        raise ValueError("no such overload: sign on a Semver")
    number = _decimal(value)
    return (number > 0) - (number < 0)


def is_integer(value: Any) -> bool:
    number = _decimal(value)
    return number == number.to_integral_value() and _INT64_MIN <= number <= _INT64_MAX


def as_integer(value: Any) -> int:
    number = _decimal(value)
    if number != number.to_integral_value() or not _INT64_MIN <= number <= _INT64_MAX:
        raise ValueError("cannot convert value to integer")
    return int(number)


def as_approximate_float(value: Any) -> float:
    return float(_decimal(value))


def add(value: Any, other: Any) -> dict[str, str]:
    addend = Decimal(other) if isinstance(other, int) else _decimal(other)
    return quantity_value(_decimal(value) + addend)


def sub(value: Any, other: Any) -> dict[str, str]:
    subtrahend = Decimal(other) if isinstance(other, int) else _decimal(other)
    return quantity_value(_decimal(value) - subtrahend)


# -------------------------------------------------------------------- semver
def _parse_semver(text: str, normalize: bool) -> tuple[int, int, int, str]:
    if normalize:
        loose = _LOOSE.match(text)
        if loose is not None:
            major, minor, patch, rest = loose.groups()
            text = f"{int(major)}.{int(minor or 0)}.{int(patch or 0)}{rest}"
    match = _SEMVER.match(text)
    if match is None:
        raise ValueError(f"could not parse {text!r} as semver")
    return int(match[1]), int(match[2]), int(match[3]), match[4] or ""


def semver_value(text: str, normalize: bool = False) -> dict[str, str]:
    """The tagged CEL form of a version (build metadata dropped: it never
    takes part in comparisons)."""
    major, minor, patch, pre = _parse_semver(text, normalize)
    return {SEMVER_TAG: f"{major}.{minor}.{patch}" + (f"-{pre}" if pre else "")}


def semver(text: str, normalize: bool = False) -> dict[str, str]:
    return semver_value(text, normalize)


def is_semver(text: str, normalize: bool = False) -> bool:
    try:
        _parse_semver(text, normalize)
    except ValueError:
        return False
    return True


def _version(value: Any) -> tuple[int, int, int, str]:
    if isinstance(value, Mapping) and SEMVER_TAG in value:
        return _parse_semver(value[SEMVER_TAG], False)
    raise ValueError("no such overload: argument is not a Semver")


def major(value: Any) -> int:
    return _version(value)[0]


def minor(value: Any) -> int:
    return _version(value)[1]


def patch(value: Any) -> int:
    return _version(value)[2]


def _pre_release_key(pre: str) -> tuple[int, tuple[tuple[int, int, str], ...]]:
    # A version without pre-release ranks above any with one; numeric
    # identifiers rank below alphanumeric ones and compare as numbers.
    if not pre:
        return (1, ())
    parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split("."))
    return (0, parts)


def _semver_compare(left: Any, right: Any) -> int:
    a, b = _version(left), _version(right)
    key_a = (a[0], a[1], a[2], _pre_release_key(a[3]))
    key_b = (b[0], b[1], b[2], _pre_release_key(b[3]))
    return (key_a > key_b) - (key_a < key_b)


# ------------------------------------------------------- shared comparisons
def compare_to(value: Any, other: Any) -> int:
    """Quantity or Semver ``compareTo``: -1, 0 or 1; mixing them is an error."""
    if isinstance(value, Mapping) and SEMVER_TAG in value:
        return _semver_compare(value, other)
    left, right = _decimal(value), _decimal(other)
    return (left > right) - (left < right)


def is_greater_than(value: Any, other: Any) -> bool:
    return compare_to(value, other) > 0


def is_less_than(value: Any, other: Any) -> bool:
    return compare_to(value, other) < 0
