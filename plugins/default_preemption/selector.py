"""metav1.LabelSelector matching (``LabelSelectorAsSelector``), as PDBs use it.

Pure. An empty selector ({}) and an absent one match nothing here (upstream
treats an empty PDB selector as matching nothing); an invalid one (unknown
operator, In/NotIn without values, Exists/DoesNotExist with values) parses
to None, which also matches nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "In":
            return self.key in labels and labels[self.key] in self.values
        if self.operator == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == "Exists":
            return self.key in labels
        return self.key not in labels  # DoesNotExist


@dataclass(frozen=True, slots=True)
class LabelSelector:
    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Every requirement holds; an empty selector matches nothing."""
        if not self.requirements:
            return False
        return all(requirement.matches(labels) for requirement in self.requirements)


def parse_selector(raw: Mapping[str, Any] | None) -> LabelSelector | None:
    if raw is None:
        return None
    requirements = [
        Requirement(key, "In", frozenset({value}))
        for key, value in (raw.get("matchLabels") or {}).items()
    ]
    for expression in raw.get("matchExpressions") or ():
        operator = expression.get("operator") or ""
        values = frozenset(expression.get("values") or ())
        if operator not in _OPERATORS:
            return None
        if (operator in ("In", "NotIn")) != bool(values):
            return None
        requirements.append(Requirement(expression.get("key") or "", operator, values))
    return LabelSelector(tuple(requirements))
