"""Node selectors (``v1.NodeSelector``) matched against a node, as upstream's
``component-helpers/scheduling/corev1/nodeaffinity``.

Terms are ORed; inside a term every ``matchExpressions`` requirement (on
labels) and every ``matchFields`` requirement (only ``metadata.name``) must
hold; a term with neither matches nothing. Operators: In, NotIn, Exists,
DoesNotExist, Gt, Lt (integers). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Raw = Mapping[str, Any]


def _requirement(requirement: Raw, value: str | None) -> bool:
    operator = requirement.get("operator") or ""
    values: list[str] = list(requirement.get("values") or ())
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and len(values) == 1:
        try:
            left, right = int(value), int(values[0])
        except ValueError:
            return False
        return left > right if operator == "Gt" else left < right
    return False


def term_matches(term: Raw, name: str, labels: Mapping[str, str]) -> bool:
    expressions = term.get("matchExpressions") or ()
    fields = term.get("matchFields") or ()
    if not expressions and not fields:
        return False
    for requirement in expressions:
        if not _requirement(requirement, labels.get(requirement.get("key") or "")):
            return False
    for requirement in fields:
        if requirement.get("key") != "metadata.name" or not _requirement(requirement, name):
            return False
    return True


def node_selector_matches(selector: Raw, name: str, labels: Mapping[str, str]) -> bool:
    return any(term_matches(term, name, labels) for term in selector.get("nodeSelectorTerms") or ())


def local_node_selector(node_name: str) -> dict[str, Any]:
    """The selector of an allocation that is usable on one node only."""
    return {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
        ]
    }
