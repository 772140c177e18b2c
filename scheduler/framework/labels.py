"""Label selectors (``metav1.LabelSelector``), parsed once and matched often.

``parse_label_selector`` follows upstream ``LabelSelectorAsSelector``: an
absent selector (None) selects nothing, an empty one (``{}``) everything;
``matchLabels`` become equality requirements and ``matchExpressions`` keep
their operator (In, NotIn, Exists, DoesNotExist). A malformed expression, a
key that is not a qualified name or a value that is not a label value
(``labels.NewRequirement``'s checks, in apimachinery's words) raises
``LabelSelectorError`` naming what is wrong, as upstream refuses it.

Requirement semantics (upstream ``labels.Requirement.Matches``): In needs the
key with one of the values; NotIn holds when the key is absent or its value is
not listed; Exists/DoesNotExist test the key only. A selector matches when all
of its requirements do.

Immutable and hashable, so that plugins may keep parsed selectors in their
cycle state and in parsed pods.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.framework.nodeaffinity import (
    invalid_value,
    label_value_problem,
    qualified_name_problem,
)


class LabelSelectorError(ValueError):
    """A label selector that upstream would refuse to convert."""


class Operator(enum.StrEnum):
    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: Operator
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        operator = self.operator
        if operator is Operator.IN:
            value = labels.get(self.key)
            return value is not None and value in self.values
        if operator is Operator.NOT_IN:
            value = labels.get(self.key)
            return value is None or value not in self.values
        if operator is Operator.EXISTS:
            return self.key in labels
        return self.key not in labels


@dataclass(frozen=True, slots=True)
class Selector:
    """All of ``requirements`` must hold; ``nothing`` selects no labels at all."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False
    # Derived, for the hot path: single-value In requirements as (key, value)
    # pairs (what matchLabels give), and the rest.
    _equalities: tuple[tuple[str, str], ...] = field(
        init=False, repr=False, compare=False, default=()
    )
    _others: tuple[Requirement, ...] = field(init=False, repr=False, compare=False, default=())

    def __post_init__(self) -> None:
        equalities = []
        others = []
        for requirement in self.requirements:
            if requirement.operator is Operator.IN and len(requirement.values) == 1:
                (value,) = requirement.values
                equalities.append((requirement.key, value))
            else:
                others.append(requirement)
        object.__setattr__(self, "_equalities", tuple(equalities))
        object.__setattr__(self, "_others", tuple(others))

    @property
    def empty(self) -> bool:
        """Upstream ``Selector.Empty()``: no requirement (selects everything).
        The "nothing" selector is not empty."""
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        get = labels.get
        for key, value in self._equalities:
            if get(key) != value:
                return False
        for requirement in self._others:  # noqa: SIM110 - hot path, no generator
            if not requirement.matches(labels):
                return False
        return True

    def add(self, requirements: Iterable[Requirement]) -> Selector:
        """Upstream ``Selector.Add``: more requirements (nothing stays nothing)."""
        if self.nothing:
            return self
        return Selector((*self.requirements, *requirements))


EVERYTHING = Selector()
NOTHING = Selector(nothing=True)


def selector_from_set(labels: Mapping[str, str]) -> Selector:
    """Upstream ``labels.SelectorFromSet``: one equality per label (empty: everything)."""
    return Selector(
        tuple(
            Requirement(key, Operator.IN, frozenset((value,)))
            for key, value in sorted(labels.items())
        )
    )


def parse_label_selector(raw: Mapping[str, Any] | None) -> Selector:
    """Upstream ``metav1.LabelSelectorAsSelector``."""
    if raw is None:
        return NOTHING
    match_labels = raw.get("matchLabels") or {}
    expressions = raw.get("matchExpressions") or ()
    if not match_labels and not expressions:
        return EVERYTHING
    for key, value in sorted(match_labels.items()):
        _check_key(key)
        _check_values((value,))
    requirements = list(selector_from_set(match_labels).requirements)
    for index, expression in enumerate(expressions):
        requirements.append(_requirement(expression, index))
    return Selector(tuple(requirements))


def _requirement(expression: Mapping[str, Any], index: int) -> Requirement:
    key = expression.get("key") or ""
    operator = expression.get("operator") or ""
    values = frozenset(expression.get("values") or ())
    where = f"matchExpressions[{index}]"
    if not key:
        raise LabelSelectorError(f"{where}.key: Required value")
    _check_key(key)
    try:
        parsed = Operator(operator)
    except ValueError:
        raise LabelSelectorError(
            f"{where}.operator: {operator!r} is not a valid operator"
        ) from None
    if parsed in (Operator.IN, Operator.NOT_IN) and not values:
        raise LabelSelectorError(
            f"{where}.values: for 'in', 'notin' operators, values set can't be empty"
        )
    if parsed in (Operator.EXISTS, Operator.DOES_NOT_EXIST) and values:
        raise LabelSelectorError(
            f"{where}.values: values set must be empty for exists and does not exist"
        )
    _check_values(expression.get("values") or ())
    return Requirement(key, parsed, values)


def _check_key(key: str) -> None:
    """``labels.NewRequirement``'s key check (``IsQualifiedName``)."""
    problem = qualified_name_problem(key)
    if problem:
        raise LabelSelectorError(invalid_value("key", key, problem))


def _check_values(values: Iterable[Any]) -> None:
    """``labels.NewRequirement``'s value check (``IsValidLabelValue``)."""
    for index, value in enumerate(values):
        problem = label_value_problem(str(value))
        if problem:
            raise LabelSelectorError(invalid_value(f"values[{index}]", str(value), problem))
