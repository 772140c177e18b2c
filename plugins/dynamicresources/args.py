"""DynamicResourcesArgs: the plugin's typed, validated arguments.

Mirrors upstream ``DynamicResourcesArgs``: ``filterTimeout`` (a duration,
default 10s; 0 disables the per-node allocation timeout) and
``bindingTimeout`` (default 600s, at least 1s: how long PreBind waits for
binding conditions). Durations are Go-style strings (``10s``, ``1m30s``)
or numbers of seconds. ``validate_args_for_features`` refuses a timeout
whose feature gate is off.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, field_serializer, field_validator
from pydantic.alias_generators import to_camel

from plugins.dynamicresources.features import Features
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


def validate_args_for_features(args: DynamicResourcesArgs, features: Features) -> None:
    """A timeout whose gate is off may not be configured (upstream
    ``ValidateDynamicResourcesArgs``). Unlike upstream, a value equal to the
    default passes: upstream leaves a gated-off timeout out of its defaults,
    while our configuration dump (``--write-config-to``) always writes the
    defaults, and that dump must load again with the gate off."""
    problems = []
    given = args.model_fields_set
    if (
        not features.filter_timeout
        and "filter_timeout" in given
        and args.filter_timeout != DEFAULT_FILTER_TIMEOUT
    ):
        problems.append(
            "filterTimeout: Forbidden: DRASchedulingFilterTimeout feature gate is disabled"
        )
    if (
        not features.binding_conditions
        and "binding_timeout" in given
        and args.binding_timeout != DEFAULT_BINDING_TIMEOUT
    ):
        problems.append(
            "bindingTimeout: Forbidden: DRADeviceBindingConditions or"
            " DRAResourceClaimDeviceStatus feature gate is disabled"
        )
    if problems:
        raise ValueError(", ".join(problems))
