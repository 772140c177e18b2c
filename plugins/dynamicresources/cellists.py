"""The Kubernetes ``lists`` CEL library (``k8s.io/apiserver/pkg/cel/library``
``Lists``), for the DRA selector adapter: ``isSorted``, ``sum``, ``min``,
``max``, ``indexOf`` and ``lastIndexOf`` on lists; and DRA's ``includes``
(``k8s.io/dynamic-resource-allocation/cel``, DRAListTypeAttributes) on a list
or a scalar attribute.

Each function is the Python implementation of one CEL overload declared by
``cel.py`` on ``list(dyn)``. A value the operation does not support (mixed
or incomparable elements, ``min``/``max`` of an empty list) raises
``ValueError`` with upstream's wording where it has one, which the runtime
turns into a CEL error value. Pure: no state.

CEL's own ``==`` never equates a bool with a number, unlike Python's, so
equality below compares types first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _comparable(values: Sequence[Any]) -> None:
    kinds = {type(value) for value in values}
    numeric = kinds <= {int, float}
    if len(kinds) > 1 and not numeric:
        raise ValueError("no such overload: list elements are not of one comparable type")
    if kinds and not numeric and not kinds <= {str, bytes, bool}:
        raise ValueError("no such overload: list elements are not comparable")


def is_sorted(values: Sequence[Any]) -> bool:
    _comparable(values)
    return all(values[i] <= values[i + 1] for i in range(len(values) - 1))


def total(values: Sequence[Any]) -> Any:
    """``sum``: 0 for an empty list, as upstream's untyped ``[].sum()``."""
    if any(isinstance(value, bool) or not isinstance(value, int | float) for value in values):
        raise ValueError("no such overload: sum needs numbers")
    return sum(values) if values else 0


def _extreme(values: Sequence[Any], name: str, pick: Any) -> Any:
    if not values:
        raise ValueError(f"{name} called on empty list")
    _comparable(values)
    return pick(values)


def minimum(values: Sequence[Any]) -> Any:
    return _extreme(values, "min", min)


def maximum(values: Sequence[Any]) -> Any:
    return _extreme(values, "max", max)


def _same(left: Any, right: Any) -> bool:
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    return bool(left == right)


def index_of(values: Sequence[Any], item: Any) -> int:
    return next((i for i, value in enumerate(values) if _same(value, item)), -1)


def last_index_of(values: Sequence[Any], item: Any) -> int:
    for i in range(len(values) - 1, -1, -1):
        if _same(values[i], item):
            return i
    return -1


# resourceapi.ResourceSliceMaxAttributeValuesPerDevice: ``includes`` refuses
# to scan a longer list, which bounds its cost
INCLUDES_MAX_VALUES = 48


def includes(target: Any, item: Any) -> bool:
    """``target.includes(item)``: a list holds ``item`` (scanning at most
    ``INCLUDES_MAX_VALUES`` elements: a longer list is an error unless the
    item is found first, as upstream), any other value equals it."""
    if not isinstance(target, list | tuple):
        return _same(target, item)
    for index, value in enumerate(target):
        if index >= INCLUDES_MAX_VALUES:
            raise ValueError(
                "'includes' function cannot be applied to lists longer than "
                f"{INCLUDES_MAX_VALUES} values"
            )
        if _same(value, item):
            return True
    return False
