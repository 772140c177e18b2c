"""Node selectors and node affinity, parsed once and matched often.

Upstream ``k8s.io/component-helpers/scheduling/corev1/nodeaffinity`` over
``labels.Requirement``/``fields.Selector``:

- A ``NodeSelectorTerm`` ANDs its ``matchExpressions`` (node labels: In, NotIn,
  Exists, DoesNotExist, Gt, Lt) and its ``matchFields`` (only
  ``metadata.name`` exists as a node field: In/NotIn with exactly one value).
  A term with neither is dropped: it selects nothing. A term that does not
  parse (unknown operator, wrong number of values, a Gt/Lt value that is no
  integer, an invalid label key or value) never matches; its errors are
  kept, as upstream's "lazy error" selector keeps them.
- A ``NodeSelector`` ORs its terms; no terms left means no node matches.
- ``RequiredNodeAffinity`` is the pod's ``nodeSelector`` (every label equal)
  AND its required node affinity (``GetRequiredNodeAffinity``).
- ``PreferredTerms`` sum the weights of the matching preferred terms; terms
  of weight 0 or empty are dropped, and a term that does not parse makes the
  whole list an error (upstream ``NewPreferredSchedulingTerms``).

Requirement semantics (``labels.Requirement.Matches``): In needs the key with
a listed value; NotIn holds when the key is absent or its value unlisted;
Gt/Lt need the key with a value that parses as a base-10 int64 and compares
strictly. Match fields are skipped for a node without a name.

Everything here is immutable and hashable, so parsed pods can carry it and
plugins can sign pods with it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

OBJECT_NAME_FIELD = "metadata.name"

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
GT = "Gt"
LT = "Lt"
LABEL_OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT)
FIELD_OPERATORS = (IN, NOT_IN)

_INT64 = re.compile(r"^[+-]?[0-9]+\Z")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")

Raw = Mapping[str, Any]


class NodeSelectorError(ValueError):
    """A node selector (or preferred terms) that does not parse; the message
    lists every problem with its field path, as upstream's aggregate does."""


def parse_go_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: optional sign, ASCII digits, in range."""
    if not _INT64.match(text):
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


_NAME_FORMAT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_SUBDOMAIN_FORMAT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_VALUE_FORMAT = f"({_NAME_FORMAT})?"
_NAME_MESSAGE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an"
    " alphanumeric character"
)


def _regex_error(message: str, pattern: str, *examples: str) -> str:
    """apimachinery's ``RegexError`` text, examples and pattern included."""
    shown = "".join(f"{' or ' if i else ''}'{example}', " for i, example in enumerate(examples))
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


def _max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


_NAME_ERROR = _regex_error(_NAME_MESSAGE, _NAME_FORMAT, "MyName", "my.name", "123-abc")


def qualified_name_problem(key: str) -> str | None:
    """apimachinery ``IsQualifiedName``, its messages joined with "; "."""
    parts = key.split("/")
    if len(parts) > 2:
        return (
            f"a qualified name {_NAME_ERROR} with an optional DNS subdomain prefix and '/'"
            " (e.g. 'example.com/MyName')"
        )
    problems: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                problems.append(f"prefix part {_max_len_error(253)}")
            if not _DNS_SUBDOMAIN.match(prefix):
                problems.append(
                    "prefix part "
                    + _regex_error(
                        "a DNS-1123 subdomain must consist of lower case alphanumeric"
                        " characters, '-' or '.', and must start and end with an alphanumeric"
                        " character",
                        _SUBDOMAIN_FORMAT,
                        "example.com",
                    )
                )
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append(f"name part {_max_len_error(63)}")
    if not _NAME_PART.match(name):
        problems.append(f"name part {_NAME_ERROR}")
    return "; ".join(problems) or None


def label_value_problem(value: str) -> str | None:
    """apimachinery ``IsValidLabelValue``, its messages joined with "; "."""
    problems: list[str] = []
    if len(value) > 63:
        problems.append(_max_len_error(63))
    if not _LABEL_VALUE.match(value):
        problems.append(
            _regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters,"
                " '-', '_' or '.', and must start and end with an alphanumeric character",
                _VALUE_FORMAT,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return "; ".join(problems) or None


def invalid_value(path: str, value: object, message: str) -> str:
    """``field.Invalid``'s text: the value as JSON (a string quoted)."""
    shown = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return f"{path}: Invalid value: {shown}: {message}"


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    key: str
    operator: str
    values: frozenset[str]
    bound: int = 0  # the Gt/Lt operand

    def matches(self, labels: Mapping[str, str]) -> bool:
        operator = self.operator
        if operator == IN:
            value = labels.get(self.key)
            return value is not None and value in self.values
        if operator == NOT_IN:
            value = labels.get(self.key)
            return value is None or value not in self.values
        if operator == EXISTS:
            return self.key in labels
        if operator == DOES_NOT_EXIST:
            return self.key not in labels
        value = labels.get(self.key)
        if value is None:
            return False
        number = parse_go_int64(value)
        if number is None:
            return False
        return number > self.bound if operator == GT else number < self.bound


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    key: str
    equal: bool  # In: the field equals value; NotIn: it does not
    value: str

    def matches(self, fields: Mapping[str, str]) -> bool:
        return (fields.get(self.key, "") == self.value) is self.equal


def _label_requirement(raw: Raw, path: str, errors: list[str]) -> LabelRequirement | None:
    key = raw.get("key") or ""
    operator = raw.get("operator") or ""
    values = [str(value) for value in raw.get("values") or ()]
    found = len(errors)
    if operator not in LABEL_OPERATORS:
        supported = ", ".join(f'"{op}"' for op in LABEL_OPERATORS)
        errors.append(
            f'{path}.operator: Unsupported value: "{operator}": supported values: {supported}'
        )
        return None
    problem = qualified_name_problem(key)
    if problem:
        errors.append(invalid_value(f"{path}.key", key, problem))
    bound = 0
    if operator in (IN, NOT_IN) and not values:
        errors.append(
            invalid_value(
                f"{path}.values", values, "for 'in', 'notin' operators, values set can't be empty"
            )
        )
    elif operator in (EXISTS, DOES_NOT_EXIST) and values:
        errors.append(
            invalid_value(
                f"{path}.values", values, "values set must be empty for exists and does not exist"
            )
        )
    elif operator in (GT, LT):
        if len(values) != 1:
            errors.append(
                invalid_value(
                    f"{path}.values",
                    values,
                    "for 'Gt', 'Lt' operators, exactly one value is required",
                )
            )
        for index, value in enumerate(values):
            number = parse_go_int64(value)
            if number is None:
                errors.append(
                    invalid_value(
                        f"{path}.values[{index}]",
                        value,
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    )
                )
            elif index == 0:
                bound = number
    for index, value in enumerate(values):
        problem = label_value_problem(value)
        if problem:
            errors.append(invalid_value(f"{path}.values[{index}]", value, problem))
    if len(errors) > found:
        return None
    return LabelRequirement(key, operator, frozenset(values), bound)


def _field_requirement(raw: Raw, path: str, errors: list[str]) -> FieldRequirement | None:
    key = raw.get("key") or ""
    operator = raw.get("operator") or ""
    values = [str(value) for value in raw.get("values") or ()]
    if operator not in FIELD_OPERATORS:
        supported = ", ".join(f'"{op}"' for op in FIELD_OPERATORS)
        errors.append(
            f'{path}.operator: Unsupported value: "{operator}": supported values: {supported}'
        )
        return None
    if len(values) != 1:
        errors.append(invalid_value(f"{path}.values", values, "must have one element"))
        return None
    return FieldRequirement(key, operator == IN, values[0])


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """None for a part the term does not have; ``errors`` non-empty: never matches."""

    labels: tuple[LabelRequirement, ...] | None
    fields: tuple[FieldRequirement, ...] | None
    errors: tuple[str, ...] = ()

    def matches(self, name: str, labels: Mapping[str, str]) -> bool:
        if self.errors:
            return False
        if self.labels is not None:
            for requirement in self.labels:
                if not requirement.matches(labels):
                    return False
        if self.fields is not None and name:
            fields = {OBJECT_NAME_FIELD: name}
            for field in self.fields:
                if not field.matches(fields):
                    return False
        return True


def is_empty_term(raw: Raw) -> bool:
    return not raw.get("matchExpressions") and not raw.get("matchFields")


def parse_term(raw: Raw, path: str) -> NodeSelectorTerm:
    errors: list[str] = []
    labels: tuple[LabelRequirement, ...] | None = None
    fields: tuple[FieldRequirement, ...] | None = None
    expressions = raw.get("matchExpressions") or ()
    if expressions:
        parsed = [
            _label_requirement(item, f"{path}.matchExpressions[{index}]", errors)
            for index, item in enumerate(expressions)
        ]
        labels = tuple(item for item in parsed if item is not None)
    match_fields = raw.get("matchFields") or ()
    if match_fields:
        parsed_fields = [
            _field_requirement(item, f"{path}.matchFields[{index}]", errors)
            for index, item in enumerate(match_fields)
        ]
        fields = tuple(item for item in parsed_fields if item is not None)
    return NodeSelectorTerm(labels, fields, tuple(errors))


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """Terms ORed; no terms: nothing matches."""

    terms: tuple[NodeSelectorTerm, ...]

    def matches(self, name: str, labels: Mapping[str, str]) -> bool:
        for term in self.terms:  # noqa: SIM110 - a loop: hot path, no generator
            if term.matches(name, labels):
                return True
        return False

    def errors(self) -> tuple[str, ...]:
        return tuple(error for term in self.terms for error in term.errors)


def parse_node_selector(raw: Raw, path: str = "") -> NodeSelector:
    """Upstream ``NewLazyErrorNodeSelector``: bad terms kept, never matching."""
    base = f"{path}.nodeSelectorTerms" if path else "nodeSelectorTerms"
    return NodeSelector(
        tuple(
            parse_term(term, f"{base}[{index}]")
            for index, term in enumerate(raw.get("nodeSelectorTerms") or ())
            if not is_empty_term(term)
        )
    )


def strict_node_selector(raw: Raw, path: str = "") -> NodeSelector:
    """Upstream ``NewNodeSelector``: any parse error is raised."""
    selector = parse_node_selector(raw, path)
    errors = selector.errors()
    if errors:
        raise NodeSelectorError(_aggregate(errors))
    return selector


@dataclass(frozen=True, slots=True)
class PreferredTerm:
    term: NodeSelectorTerm
    weight: int


@dataclass(frozen=True, slots=True)
class PreferredTerms:
    terms: tuple[PreferredTerm, ...]

    def score(self, name: str, labels: Mapping[str, str]) -> int:
        total = 0
        for preferred in self.terms:
            if preferred.term.matches(name, labels):
                total += preferred.weight
        return total


def parse_preferred_terms(raw_terms: Iterable[Raw], path: str = "") -> PreferredTerms:
    """Upstream ``NewPreferredSchedulingTerms``; raises NodeSelectorError."""
    terms: list[PreferredTerm] = []
    errors: list[str] = []
    for index, raw in enumerate(raw_terms):
        weight = int(raw.get("weight") or 0)
        preference = raw.get("preference") or {}
        if weight == 0 or is_empty_term(preference):
            continue
        term = parse_term(preference, f"{path}[{index}]")
        if term.errors:
            errors.extend(term.errors)
        else:
            terms.append(PreferredTerm(term, weight))
    if errors:
        raise NodeSelectorError(_aggregate(errors))
    return PreferredTerms(tuple(terms))


def _aggregate(errors: Sequence[str]) -> str:
    """``errors.NewAggregate(...).Error()``: one message, or ``[a, b]``."""
    return errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """A pod's ``nodeSelector`` AND its required node affinity.

    ``node_selector`` holds the selector's labels as sorted pairs; ``affinity``
    is None when the pod has no ``requiredDuringScheduling...`` selector.
    ``pinned_names`` is what PreFilter narrows to (see ``pinned_node_names``).
    """

    node_selector: tuple[tuple[str, str], ...] = ()
    affinity: NodeSelector | None = None
    pinned_names: frozenset[str] | None = None
    conflicting: bool = False

    @property
    def empty(self) -> bool:
        return not self.node_selector and self.affinity is None

    def matches(self, name: str, labels: Mapping[str, str]) -> bool:
        for key, value in self.node_selector:
            if labels.get(key) != value:
                return False
        if self.affinity is not None:
            return self.affinity.matches(name, labels)
        return True


NO_REQUIRED_AFFINITY = RequiredNodeAffinity()


def pinned_node_names(raw_terms: Sequence[Raw]) -> tuple[frozenset[str] | None, bool]:
    """Upstream NodeAffinity PreFilter: the union over terms of the names each
    term pins (intersection of its ``metadata.name In`` fields), or None when
    some term pins none (terms are ORed, so every node stays possible). The
    flag says the union is empty: the terms contradict themselves."""
    if not raw_terms:
        return None, False
    union: set[str] = set()
    for term in raw_terms:
        names: set[str] | None = None
        for field in term.get("matchFields") or ():
            if field.get("key") == OBJECT_NAME_FIELD and field.get("operator") == IN:
                values = {str(value) for value in field.get("values") or ()}
                names = values if names is None else names & values
        if names is None:
            return None, False
        union |= names
    return frozenset(union), not union


def required_node_affinity(spec: Raw) -> RequiredNodeAffinity:
    """Parse ``spec.nodeSelector`` and the required node affinity of a pod spec."""
    selector = spec.get("nodeSelector") or {}
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not selector and required is None:
        return NO_REQUIRED_AFFINITY
    affinity = None
    pinned: frozenset[str] | None = None
    conflicting = False
    if required is not None:
        affinity = parse_node_selector(required)
        pinned, conflicting = pinned_node_names(required.get("nodeSelectorTerms") or ())
    return RequiredNodeAffinity(
        tuple(sorted((str(k), str(v)) for k, v in selector.items())),
        affinity,
        pinned,
        conflicting,
    )


def preferred_node_affinity(spec: Raw) -> tuple[PreferredTerms | None, str]:
    """The pod's preferred node-affinity terms (None if it has none) and the
    parse error, if any (the terms are then None too)."""
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    raw_terms = node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
    if not raw_terms:  # the API server omits an empty list
        return None, ""
    try:
        return parse_preferred_terms(raw_terms), ""
    except NodeSelectorError as error:
        return None, str(error)
