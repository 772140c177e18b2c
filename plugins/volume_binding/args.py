"""VolumeBindingArgs: the plugin's typed, validated arguments.

Mirrors upstream ``kubescheduler.config.k8s.io/v1`` ``VolumeBindingArgs``:
``bindTimeoutSeconds`` (default 600, not negative) bounds PreBind's wait for
the claims to be bound. ``shape`` belongs to the StorageCapacityScoring
feature gate, which is alpha and off in 1.36, so upstream rejects it; so do we.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

DEFAULT_BIND_TIMEOUT_SECONDS = 600


class VolumeBindingArgs(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )

    bind_timeout_seconds: int = Field(default=DEFAULT_BIND_TIMEOUT_SECONDS)
    shape: tuple[Any, ...] | None = None

    @field_validator("bind_timeout_seconds")
    @classmethod
    def _not_negative(cls, value: int) -> int:
        if value < 0:
            raise ValueError("invalid BindTimeoutSeconds, should not be a negative value")
        return value

    @field_validator("shape")
    @classmethod
    def _no_shape(cls, value: tuple[Any, ...] | None) -> None:
        if value is not None:
            raise ValueError(
                "unexpected field `shape`, remove it or turn on the feature gate "
                "StorageCapacityScoring"
            )
