"""Label, node and topology selectors over raw API dicts (upstream semantics).

Pure functions, shared by every plugin that matches selectors:

- ``label_selector_matches``: ``metav1.LabelSelector`` (``matchLabels`` and
  ``matchExpressions`` with In/NotIn/Exists/DoesNotExist). An empty selector
  matches everything; None matches nothing (``LabelSelectorAsSelector``). An
  invalid selector raises ``SelectorError``.
- ``node_selector_terms_match``: ``[]NodeSelectorTerm`` as in
  ``corev1.MatchNodeSelectorTerms``: the terms are ORed, the requirements of
  one term ANDed; an empty term, or one that does not parse, matches nothing.
  ``matchFields`` supports ``metadata.name`` with In/NotIn and one value.
- ``topology_selector_terms_match``: ``[]TopologySelectorTerm`` (a
  StorageClass's ``allowedTopologies``): no terms match everything; an empty
  or invalid term matches nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Raw = Mapping[str, Any]

_NODE_NAME_FIELD = "metadata.name"


class SelectorError(ValueError):
    """A selector that upstream would refuse to convert."""


def _set_requirement(
    operator: str, key: str, values: Sequence[str], labels: Mapping[str, str]
) -> bool:
    if operator == "In":
        if not values:
            raise SelectorError(f"values for key {key!r} must be non-empty for operator In")
        return key in labels and labels[key] in values
    if operator == "NotIn":
        if not values:
            raise SelectorError(f"values for key {key!r} must be non-empty for operator NotIn")
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        if values:
            raise SelectorError(f"values for key {key!r} must be empty for operator Exists")
        return key in labels
    if operator == "DoesNotExist":
        if values:
            raise SelectorError(f"values for key {key!r} must be empty for operator DoesNotExist")
        return key not in labels
    raise SelectorError(f"{operator!r} is not a valid label selector operator")


def label_selector_matches(selector: Raw | None, labels: Mapping[str, str]) -> bool:
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or ():
        operator = expression.get("operator") or ""
        key = expression.get("key") or ""
        if not _set_requirement(operator, key, expression.get("values") or (), labels):
            return False
    return True


def _node_requirement(expression: Raw, labels: Mapping[str, str]) -> bool:
    operator = expression.get("operator") or ""
    key = expression.get("key") or ""
    values: Sequence[str] = expression.get("values") or ()
    if operator in ("Gt", "Lt"):
        if len(values) != 1:
            raise SelectorError(f"{operator} needs exactly one value for key {key!r}")
        try:
            bound = int(values[0])
        except ValueError:
            raise SelectorError(f"{operator} value {values[0]!r} is not an integer") from None
        if key not in labels:
            return False
        try:
            actual = int(labels[key])
        except ValueError:
            return False
        return actual > bound if operator == "Gt" else actual < bound
    return _set_requirement(operator, key, values, labels)


def _field_requirement(expression: Raw, node_name: str) -> bool:
    operator = expression.get("operator") or ""
    key = expression.get("key") or ""
    values: Sequence[str] = expression.get("values") or ()
    if key != _NODE_NAME_FIELD:
        raise SelectorError(f"not a supported field selector key: {key!r}")
    if operator not in ("In", "NotIn") or len(values) != 1:
        raise SelectorError(f"field {key!r} needs In or NotIn with exactly one value")
    return bool((node_name == values[0]) == (operator == "In"))


def _node_term_matches(term: Raw, labels: Mapping[str, str], node_name: str) -> bool:
    expressions = term.get("matchExpressions") or ()
    fields = term.get("matchFields") or ()
    if not expressions and not fields:
        return False
    try:
        return all(_node_requirement(e, labels) for e in expressions) and all(
            _field_requirement(f, node_name) for f in fields
        )
    except SelectorError:
        return False


def node_selector_terms_match(
    terms: Sequence[Raw], labels: Mapping[str, str], node_name: str = ""
) -> bool:
    return any(_node_term_matches(term, labels, node_name) for term in terms)


def topology_selector_terms_match(terms: Sequence[Raw], labels: Mapping[str, str]) -> bool:
    if not terms:
        return True
    for term in terms:
        expressions = term.get("matchLabelExpressions") or ()
        if not expressions:
            continue
        if all(
            (values := expression.get("values") or ())
            and labels.get(expression.get("key") or "") in values
            for expression in expressions
        ):
            return True
    return False
