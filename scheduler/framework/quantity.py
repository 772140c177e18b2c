"""Kubernetes resource quantities ("100m", "1Gi", "2e3", "0.5") as integers.

CPU is counted in millicores and everything else in whole units, rounding up
fractional values the way the API server's ``Quantity.MilliValue`` and
``Quantity.Value`` do. Parsing is strict: a malformed quantity, or one of 10^30 or more (far past
the API's 2^63, and costly to compute with), raises ``QuantityError`` naming
the text, never returns a guess.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from functools import lru_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
# ASCII digits only, and unambiguous: after the integer digits a fraction must
# start with "." and a suffix with a letter, so a failed match backtracks in
# constant steps per digit (linear; "\d+\.?\d*" was quadratic on a long digit
# string with a bad suffix).
_PATTERN = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?"
)


# Larger values mean nothing to a scheduler (the API's integer quantities stop
# at 2^63) and turning a 10^999999 into an int takes minutes: refuse them.
_LIMIT = Decimal(10) ** 30
_MAX_EXPONENT = 100


class QuantityError(ValueError):
    """A string is not a valid Kubernetes quantity."""


@lru_cache(maxsize=4096)
def parse_quantity(text: str) -> Decimal:
    """The exact value of a quantity string, in base units."""
    match = _PATTERN.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise QuantityError(f"invalid quantity {text!r}")
    try:
        number = Decimal(match["number"])
    except InvalidOperation as error:  # pragma: no cover - the pattern prevents it
        raise QuantityError(f"invalid quantity {text!r}") from error
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        value = number * _BINARY[suffix]
    elif suffix in _DECIMAL:
        value = number * _DECIMAL[suffix]
    else:
        exponent = int(suffix[1:])
        if abs(exponent) > _MAX_EXPONENT:
            raise QuantityError(f"quantity {text!r} is out of range")
        value = number * (Decimal(10) ** exponent)
    if abs(value) >= _LIMIT:
        raise QuantityError(f"quantity {text!r} is out of range")
    return value


def to_milli(text: str | int | float) -> int:
    """Millis of a quantity, rounded up (cpu: "100m" -> 100, "1" -> 1000)."""
    try:
        value = parse_quantity(str(text)) * 1000
        return int(value.to_integral_value(rounding=ROUND_CEILING))
    except ArithmeticError:  # decimal Overflow for exponents past the context's range
        raise QuantityError(f"quantity {text!r} is out of range") from None


def to_units(text: str | int | float) -> int:
    """Whole units of a quantity, rounded up (memory: "1Ki" -> 1024)."""
    try:
        value = parse_quantity(str(text))
        return int(value.to_integral_value(rounding=ROUND_CEILING))
    except ArithmeticError:  # decimal Overflow for exponents past the context's range
        raise QuantityError(f"quantity {text!r} is out of range") from None
