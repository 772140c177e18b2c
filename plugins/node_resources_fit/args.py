"""NodeResourcesFitArgs: the plugin's typed, validated arguments.

Mirrors upstream ``kubescheduler.config.k8s.io/v1`` ``NodeResourcesFitArgs``:
camelCase keys, unknown keys rejected, upstream defaults (LeastAllocated over
cpu and memory with weight 1; a weight of 0 means 1) and upstream validation
(weights in 1..100; ignored resources are qualified names; ignored groups have
no ``/``; shape points strictly increasing in utilization 0..100 with scores
0..10; a shape only with RequestedToCapacityRatio). Unlike upstream,
RequestedToCapacityRatio without a shape is rejected here instead of failing
when the plugin is built.
"""

from __future__ import annotations

import enum
import itertools
import re

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from scheduler.framework import CPU, MEMORY

MIN_WEIGHT = 1
MAX_WEIGHT = 100
MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10

# A Kubernetes qualified name: optional DNS-subdomain prefix, then a name part.
_NAME_PART = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_QUALIFIED_NAME = re.compile(rf"^(({_DNS_SUBDOMAIN})/)?{_NAME_PART}$")
_MAX_PREFIX_LENGTH = 253


class ScoringStrategyType(enum.StrEnum):
    LEAST_ALLOCATED = "LeastAllocated"
    MOST_ALLOCATED = "MostAllocated"
    REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"


class _Args(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


class ResourceSpec(_Args):
    name: str = Field(min_length=1)
    weight: int = MIN_WEIGHT

    @field_validator("weight", mode="before")
    @classmethod
    def _default_weight(cls, value: object) -> object:
        return MIN_WEIGHT if value in (0, None) else value

    @model_validator(mode="after")
    def _weight_in_range(self) -> ResourceSpec:
        if not MIN_WEIGHT <= self.weight <= MAX_WEIGHT:
            raise ValueError(f"resource weight of {self.name} not in valid range (0, {MAX_WEIGHT}]")
        return self


class UtilizationShapePoint(_Args):
    utilization: int = Field(ge=0, le=MAX_UTILIZATION)
    score: int = Field(ge=0, le=MAX_CUSTOM_PRIORITY_SCORE)


class RequestedToCapacityRatioParam(_Args):
    shape: tuple[UtilizationShapePoint, ...]

    @field_validator("shape")
    @classmethod
    def _shape_increasing(
        cls, shape: tuple[UtilizationShapePoint, ...]
    ) -> tuple[UtilizationShapePoint, ...]:
        if not shape:
            raise ValueError("at least one point must be specified")
        for before, after in itertools.pairwise(shape):
            if before.utilization >= after.utilization:
                raise ValueError("utilization values must be sorted in increasing order")
        return shape


DEFAULT_RESOURCES = (ResourceSpec(name=CPU, weight=1), ResourceSpec(name=MEMORY, weight=1))


class ScoringStrategy(_Args):
    type: ScoringStrategyType
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None

    @field_validator("resources", mode="before")
    @classmethod
    def _default_resources(cls, value: object) -> object:
        return DEFAULT_RESOURCES if value in (None, [], ()) else value

    @model_validator(mode="after")
    def _shape_when_needed(self) -> ScoringStrategy:
        ratio = self.type is ScoringStrategyType.REQUESTED_TO_CAPACITY_RATIO
        if ratio and self.requested_to_capacity_ratio is None:
            raise ValueError(
                "the RequestedToCapacityRatio strategy requires requestedToCapacityRatio.shape"
            )
        if not ratio and self.requested_to_capacity_ratio is not None:
            raise ValueError(
                "requestedToCapacityRatio: Forbidden: must be nil when type is not "
                "RequestedToCapacityRatio"
            )
        return self


class NodeResourcesFitArgs(_Args):
    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy = ScoringStrategy(type=ScoringStrategyType.LEAST_ALLOCATED)

    @field_validator("ignored_resources")
    @classmethod
    def _qualified_names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            _check_qualified_name(name)
        return names

    @field_validator("ignored_resource_groups")
    @classmethod
    def _group_names(cls, groups: tuple[str, ...]) -> tuple[str, ...]:
        for group in groups:
            if "/" in group:
                raise ValueError(f"resource group name {group!r} can't contain '/'")
            _check_qualified_name(group)
        return groups


def _check_qualified_name(name: str) -> None:
    prefix, _, _ = name.rpartition("/")
    if not _QUALIFIED_NAME.match(name) or len(prefix) > _MAX_PREFIX_LENGTH:
        raise ValueError(f"{name!r} is not a valid qualified name")
