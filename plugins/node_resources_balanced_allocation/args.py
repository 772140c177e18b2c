"""NodeResourcesBalancedAllocationArgs: typed, validated arguments.

Upstream ``NodeResourcesBalancedAllocationArgs``: the resources to balance
(default cpu and memory); a weight of 0 or none means 1, and any other weight
is refused (``must be 1``), as is a resource listed twice.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from scheduler.framework import CPU, MEMORY


class _Args(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


class BalancedResource(_Args):
    name: str = Field(min_length=1)
    weight: int = 1

    @field_validator("weight", mode="before")
    @classmethod
    def _weight_is_one(cls, value: object) -> object:
        if value in (0, None):
            return 1
        if value != 1:
            raise ValueError(f"must be 1, got {value!r}")
        return value


DEFAULT_RESOURCES = (BalancedResource(name=CPU), BalancedResource(name=MEMORY))


class NodeResourcesBalancedAllocationArgs(_Args):
    resources: tuple[BalancedResource, ...] = DEFAULT_RESOURCES

    @field_validator("resources", mode="before")
    @classmethod
    def _default_resources(cls, value: object) -> object:
        return DEFAULT_RESOURCES if value in (None, [], ()) else value

    @field_validator("resources")
    @classmethod
    def _no_duplicates(
        cls, resources: tuple[BalancedResource, ...]
    ) -> tuple[BalancedResource, ...]:
        seen: set[str] = set()
        for index, resource in enumerate(resources):
            if resource.name in seen:
                raise ValueError(f"[{index}].name: Duplicate value: {resource.name!r}")
            seen.add(resource.name)
        return resources
