"""The AutoscaleEnforcer configuration: the JSON document in a ConfigMap.

Source: ConfigMap ``kube-system/scheduler-plugin-config``, data key
``autoscaler-enforcer-config.json`` (the plugin's args can point elsewhere).
``parse_config(text)`` decodes it strictly (unknown keys are errors) and
validates it; every error is reported as ``Invalid configuration: at
<json.path>: <reason>``. Quantities are exact: cpu in millicores, memory in
bytes, never floats.

``Config.node_config(name)`` picks the first override listing the node, else
the defaults; ``derive_node(node_config, allocatable)`` turns it into the
node's budget (``NodeBudget``). A whole new ``Config`` replaces the old one
at once, so every node's budget is recomputed from the same document: an
update is never half applied.

Invariants of a valid config: watermarks in (0, 1]; compute unit fields > 0;
``memBlockSize`` a whole number of bytes > 0; ``system`` >= 0 (the reference
demanded > 0; allocatable already excludes the kubelet's reservations, so 0
is meaningful here); score parameters in [0, 1].
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from decimal import Decimal
from typing import Annotated, Any

import orjson
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)

from scheduler.framework.quantity import QuantityError, parse_quantity

CONFIG_MAP_NAMESPACE = "kube-system"
CONFIG_MAP_NAME = "scheduler-plugin-config"
CONFIG_MAP_KEY = "autoscaler-enforcer-config.json"
INIT_CONFIG_MAP_TIMEOUT_SECONDS = 5

MILLI_PER_CPU = 1000
MAX_UINT16 = 2**16 - 1


class ConfigError(ValueError):
    """A configuration document that cannot be used; the message names the path."""


def _quantity(value: object) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError("must be a quantity (string or number)")
    try:
        return parse_quantity(str(value))
    except QuantityError as error:
        raise ValueError(str(error)) from None


Quantity = Annotated[Decimal, BeforeValidator(_quantity)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, strict=False)


class ResourceConfig(_Model):
    watermark: float = Field(gt=0, le=1)
    system: Quantity

    @field_validator("system")
    @classmethod
    def _non_negative(cls, value: Decimal) -> Decimal:
        if value < 0:
            raise ValueError("value must not be negative")
        return value


class ComputeUnit(_Model):
    """Whole vCPUs and memory slots, as in the reference (uint16 each)."""

    vcpus: int = Field(alias="vCPUs", ge=0, le=MAX_UINT16)
    mem: int = Field(ge=0, le=MAX_UINT16)

    @field_validator("vcpus")
    @classmethod
    def _vcpus_non_zero(cls, value: int) -> int:
        if value == 0:
            raise ValueError("vCPUs must be non-zero")
        return value

    @field_validator("mem")
    @classmethod
    def _mem_non_zero(cls, value: int) -> int:
        if value == 0:
            raise ValueError("mem must be non-zero")
        return value


class NodeConfig(_Model):
    cpu: ResourceConfig
    memory: ResourceConfig
    compute_unit: ComputeUnit = Field(alias="computeUnit")

    @field_validator("memory")
    @classmethod
    def _whole_bytes(cls, value: ResourceConfig) -> ResourceConfig:
        if value.system != value.system.to_integral_value():
            raise ValueError("system: value cannot have milli-precision")
        return value


class NodeOverride(_Model):
    nodes: tuple[str, ...]
    config: NodeConfig

    @field_validator("nodes")
    @classmethod
    def _non_empty(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("array must be non-empty")
        return value


class ScoreCurve(enum.StrEnum):
    """``targetFill`` (later upstream, the default): peaks at ``scorePeak`` fill.
    ``nodeSize`` (v0.1.13): bigger nodes always win, free room ignored."""

    TARGET_FILL = "targetFill"
    NODE_SIZE = "nodeSize"


class Config(_Model):
    node_defaults: NodeConfig = Field(alias="nodeDefaults")
    node_overrides: tuple[NodeOverride, ...] = Field(default=(), alias="nodeOverrides")
    mem_block_size: Quantity = Field(alias="memBlockSize")
    scheduler_name: str = Field(alias="schedulerName", min_length=1)
    do_migration: bool | None = Field(default=None, alias="doMigration")
    score_curve: ScoreCurve = Field(default=ScoreCurve.TARGET_FILL, alias="scoreCurve")
    score_peak: float = Field(default=0.8, alias="scorePeak", ge=0, le=1)
    min_usage_score: float = Field(default=0.5, alias="minUsageScore", ge=0, le=1)
    max_usage_score: float = Field(default=0.0, alias="maxUsageScore", ge=0, le=1)
    randomize: bool = False

    @field_validator("node_overrides", mode="before")
    @classmethod
    def _null_is_empty(cls, value: object) -> object:
        return () if value is None else value

    @field_validator("mem_block_size")
    @classmethod
    def _positive_bytes(cls, value: Decimal) -> Decimal:
        if value <= 0:
            raise ValueError("value must be > 0")
        if value != value.to_integral_value():
            raise ValueError("value cannot have milli-precision")
        return value

    @property
    def migration_enabled(self) -> bool:
        """``doMigration`` null means enabled, as in the reference."""
        return self.do_migration is not False

    @property
    def slot_bytes(self) -> int:
        return int(self.mem_block_size)

    def node_config(self, node_name: str) -> NodeConfig:
        """The first override listing ``node_name``, else the defaults."""
        for override in self.node_overrides:
            if node_name in override.nodes:
                return override.config
        return self.node_defaults


@dataclass(frozen=True, slots=True)
class NodeBudget:
    """What a node offers to this plugin, exact units (millicores, bytes)."""

    cpu_total: int
    mem_total: int
    cpu_watermark: int
    mem_watermark: int
    cpu_unit: int  # one compute unit of cpu, millicores
    mem_unit: int  # one compute unit of memory, bytes

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its fields (cheaper than a slotted dataclass's default)."""
        fields = (self.cpu_total, self.mem_total, self.cpu_watermark, self.mem_watermark)
        return (NodeBudget, (*fields, self.cpu_unit, self.mem_unit))


def derive_node(
    node_config: NodeConfig, slot_bytes: int, allocatable_milli_cpu: int, allocatable_memory: int
) -> NodeBudget:
    """The node's budget: allocatable minus ``system`` (saturating, never
    negative), watermarks as fractions of that, rounded down."""
    cpu_system = int((node_config.cpu.system * MILLI_PER_CPU).to_integral_value("ROUND_CEILING"))
    mem_system = int(node_config.memory.system)
    cpu_total = max(0, allocatable_milli_cpu - cpu_system)
    mem_total = max(0, allocatable_memory - mem_system)
    return NodeBudget(
        cpu_total=cpu_total,
        mem_total=mem_total,
        cpu_watermark=int(Decimal(repr(node_config.cpu.watermark)) * cpu_total),
        mem_watermark=int(Decimal(repr(node_config.memory.watermark)) * mem_total),
        cpu_unit=node_config.compute_unit.vcpus * MILLI_PER_CPU,
        mem_unit=node_config.compute_unit.mem * slot_bytes,
    )


def _path(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text or "<root>"


def _reason(error: Any) -> str:
    message = str(error["msg"])
    return message.removeprefix("Value error, ")


def validation_message(error: ValidationError) -> str:
    """``Invalid configuration: at <path>: <reason>`` for each problem, joined by ``; ``."""
    parts = [f"at {_path(tuple(e['loc']))}: {_reason(e)}" for e in error.errors()]
    return "Invalid configuration: " + "; ".join(parts)


def parse_config(text: str | bytes) -> Config:
    """Decode and validate a configuration document; raises ``ConfigError``."""
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        raise ConfigError(f"Invalid configuration: bad JSON: {error}") from None
    if not isinstance(document, dict):
        raise ConfigError("Invalid configuration: at <root>: must be a JSON object")
    try:
        return Config.model_validate(document)
    except ValidationError as error:
        raise ConfigError(validation_message(error)) from None


def check_update(old: Config, new: Config) -> None:
    """Fields that cannot change while running (VM sizes in slots depend on
    them); raises ``ConfigError``. Compared by value: ``1Gi`` == ``1024Mi``."""
    if new.scheduler_name != old.scheduler_name:
        raise ConfigError(
            "Invalid configuration: at schedulerName: value cannot be changed at runtime"
        )
    if new.mem_block_size != old.mem_block_size:
        raise ConfigError(
            "Invalid configuration: at memBlockSize: value cannot be changed at runtime"
        )


def config_from_config_map(config_map: Any, key: str) -> Config:
    """The config in ``config_map``'s ``data[key]``; raises ``ConfigError``."""
    data = (config_map or {}).get("data") or {}
    if key not in data:
        raise ConfigError(f"ConfigMap missing map key {key!r}")
    return parse_config(data[key])
