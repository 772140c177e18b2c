"""DynamicResourcesArgs: the plugin's typed, validated arguments.

Mirrors upstream ``DynamicResourcesArgs``: ``filterTimeout`` (a duration,
default 10s; 0 disables the per-node allocation timeout) and
``bindingTimeout`` (default 600s, at least 1s: how long PreBind waits for
binding conditions). Durations are Go-style strings (``10s``, ``1m30s``)
or numbers of seconds.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, field_serializer, field_validator
from pydantic.alias_generators import to_camel

from scheduler.framework.durations import format_duration, parse_duration

DEFAULT_FILTER_TIMEOUT = 10.0
DEFAULT_BINDING_TIMEOUT = 600.0


def _seconds(value: object) -> float:
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"invalid duration {value!r}")
    return parse_duration(value)


class DynamicResourcesArgs(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )

    filter_timeout: float = DEFAULT_FILTER_TIMEOUT
    binding_timeout: float = DEFAULT_BINDING_TIMEOUT

    @field_serializer("filter_timeout", "binding_timeout")
    def _as_go_duration(self, value: float) -> str:
        """Dumped as upstream writes them (``10s``), so a dump is valid upstream input."""
        return format_duration(value)

    @field_validator("filter_timeout", "binding_timeout", mode="before")
    @classmethod
    def _duration(cls, value: object) -> float:
        return _seconds(value)

    @field_validator("filter_timeout")
    @classmethod
    def _non_negative(cls, value: float) -> float:
        if value < 0:
            raise ValueError("filterTimeout must not be negative")
        return value

    @field_validator("binding_timeout")
    @classmethod
    def _at_least_a_second(cls, value: float) -> float:
        if value < 1:
            raise ValueError("bindingTimeout must be at least 1s")
        return value
