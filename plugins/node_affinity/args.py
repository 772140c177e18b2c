"""NodeAffinityArgs: the plugin's typed, validated arguments.

Mirrors upstream ``kubescheduler.config.k8s.io/v1`` ``NodeAffinityArgs``:
``addedAffinity`` is a ``v1.NodeAffinity`` that every pod of the profile must
also satisfy (required terms) and is scored by (preferred terms). Validation
is upstream's ``ValidateNodeAffinityArgs``: both parts must parse strictly;
errors name the field path below ``addedAffinity`` (``requiredDuringScheduling
IgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator
from pydantic.alias_generators import to_camel

from scheduler.framework.nodeaffinity import (
    NodeSelector,
    NodeSelectorError,
    PreferredTerms,
    parse_preferred_terms,
    strict_node_selector,
)

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


class NodeAffinityArgs(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )

    added_affinity: dict[str, Any] | None = None

    @field_validator("added_affinity")
    @classmethod
    def _parses(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        unknown = sorted(set(value) - {REQUIRED, PREFERRED})
        if unknown:
            raise ValueError(f"unknown field(s) {', '.join(map(repr, unknown))}")
        problems = []
        try:
            _required(value)
        except NodeSelectorError as error:
            problems.append(str(error))
        try:
            _preferred(value)
        except NodeSelectorError as error:
            problems.append(str(error))
        if problems:
            raise ValueError(problems[0] if len(problems) == 1 else f"[{', '.join(problems)}]")
        return value

    def required(self) -> NodeSelector | None:
        """The scheduler-enforced required selector, or None."""
        return None if self.added_affinity is None else _required(self.added_affinity)

    def preferred(self) -> PreferredTerms | None:
        """The added preferred terms, or None when there are none."""
        return None if self.added_affinity is None else _preferred(self.added_affinity)


def _required(affinity: dict[str, Any]) -> NodeSelector | None:
    raw = affinity.get(REQUIRED)
    if raw is None:
        return None
    return strict_node_selector(raw, REQUIRED)


def _preferred(affinity: dict[str, Any]) -> PreferredTerms | None:
    raw = affinity.get(PREFERRED)
    if not raw:
        return None
    return parse_preferred_terms(raw, PREFERRED)
