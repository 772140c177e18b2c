"""Which nodes count for a spread constraint: the pod's required node
affinity (``nodeAffinityPolicy: Honor``) and its tolerations of NoSchedule and
NoExecute taints (``nodeTaintsPolicy: Honor``).

``RequiredNodeAffinity`` follows upstream ``nodeaffinity.GetRequiredNodeAffinity``:
every ``nodeSelector`` label must match, and, if the pod has required node
affinity, at least one of its terms (a term matches when all its
``matchExpressions`` hold on the node's labels and all its ``matchFields`` on
``metadata.name``; an empty or malformed term matches nothing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.framework import Node, Pod, Taint, Toleration

_EMPTY: Mapping[str, Any] = {}
_HARD_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


def _requirement_matches(requirement: Mapping[str, Any], value: str | None) -> bool:
    operator = requirement.get("operator")
    values: Sequence[str] = requirement.get("values") or ()
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt"):
        if value is None or len(values) != 1:
            return False
        try:
            have, bound = int(value), int(values[0])
        except ValueError:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def _term_matches(term: Mapping[str, Any], node: Node) -> bool:
    expressions = term.get("matchExpressions") or ()
    fields = term.get("matchFields") or ()
    if not expressions and not fields:
        return False
    for expression in expressions:
        if not _requirement_matches(expression, node.labels.get(expression.get("key") or "")):
            return False
    for field in fields:
        if field.get("key") != "metadata.name" or field.get("operator") not in ("In", "NotIn"):
            return False
        if not _requirement_matches(field, node.name):
            return False
    return True


class RequiredNodeAffinity:
    """A pod's node selector and required node-affinity terms."""

    __slots__ = ("_node_selector", "_terms")

    def __init__(self, pod: Pod) -> None:
        self._node_selector = pod.node_selector
        required = ((pod.affinity or _EMPTY).get("nodeAffinity") or _EMPTY).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        self._terms: Sequence[Mapping[str, Any]] | None = (
            None if required is None else (required.get("nodeSelectorTerms") or ())
        )

    def matches(self, node: Node) -> bool:
        labels = node.labels
        for key, value in self._node_selector.items():
            if labels.get(key) != value:
                return False
        if self._terms is None:
            return True
        return any(_term_matches(term, node) for term in self._terms)


def tolerates_hard_taints(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> bool:
    """No NoSchedule/NoExecute taint is left untolerated."""
    for taint in taints:
        if taint.effect in _HARD_EFFECTS and not any(t.tolerates(taint) for t in tolerations):
            return False
    return True
