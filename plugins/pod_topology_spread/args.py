"""PodTopologySpreadArgs: the plugin's typed, validated arguments.

Mirrors upstream ``kubescheduler.config.k8s.io/v1`` ``PodTopologySpreadArgs``:
``defaultingType`` defaults to ``System`` (the built-in constraints, which
require ``defaultConstraints`` to be empty); ``List`` uses
``defaultConstraints``. Each default constraint is validated as upstream:
``maxSkew`` > 0, a topology key that is a label name, ``whenUnsatisfiable``
DoNotSchedule or ScheduleAnyway, no ``labelSelector`` (it is deduced per pod
from its services and controller), no two with the same key and action.
"""

from __future__ import annotations

import enum
import re

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"

_NAME_PART = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_LABEL_NAME = re.compile(rf"^(({_DNS_SUBDOMAIN})/)?{_NAME_PART}$")


class DefaultingType(enum.StrEnum):
    SYSTEM = "System"
    LIST = "List"


class WhenUnsatisfiable(enum.StrEnum):
    DO_NOT_SCHEDULE = DO_NOT_SCHEDULE
    SCHEDULE_ANYWAY = SCHEDULE_ANYWAY


class NodeInclusionPolicy(enum.StrEnum):
    HONOR = "Honor"
    IGNORE = "Ignore"


class _Args(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


class DefaultConstraint(_Args):
    """A ``v1.TopologySpreadConstraint`` without a selector."""

    max_skew: int = Field(gt=0)
    topology_key: str
    when_unsatisfiable: WhenUnsatisfiable
    label_selector: None = None
    min_domains: int | None = Field(default=None, gt=0)
    node_affinity_policy: NodeInclusionPolicy | None = None
    node_taints_policy: NodeInclusionPolicy | None = None
    match_label_keys: tuple[str, ...] = ()

    @field_validator("topology_key")
    @classmethod
    def _label_name(cls, key: str) -> str:
        if not key:
            raise ValueError("can not be empty")
        prefix, _, _ = key.rpartition("/")
        if not _LABEL_NAME.match(key) or len(prefix) > 253:
            raise ValueError(f"{key!r} is not a valid label name")
        return key

    @field_validator("label_selector", mode="before")
    @classmethod
    def _no_selector(cls, value: object) -> None:
        if value is not None:
            raise ValueError("constraint must not define a selector, as they deduced for each pod")


class PodTopologySpreadArgs(_Args):
    default_constraints: tuple[DefaultConstraint, ...] = ()
    defaulting_type: DefaultingType = DefaultingType.SYSTEM

    @model_validator(mode="after")
    def _consistent(self) -> PodTopologySpreadArgs:
        if self.defaulting_type is DefaultingType.SYSTEM and self.default_constraints:
            raise ValueError(
                'defaultingType: Invalid value: "System": when .defaultConstraints are not empty'
            )
        seen: set[tuple[str, str]] = set()
        for index, constraint in enumerate(self.default_constraints):
            pair = (constraint.topology_key, constraint.when_unsatisfiable.value)
            if pair in seen:
                raise ValueError(
                    f'defaultConstraints[{index}]: Duplicate value: "{{{pair[0]}, {pair[1]}}}"'
                )
            seen.add(pair)
        return self
