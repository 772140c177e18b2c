"""The AutoscaleEnforcer configuration: the JSON document in a ConfigMap.

Source: ConfigMap ``kube-system/scheduler-plugin-config``, data key
``autoscaler-enforcer-config.json`` (the plugin's args can point elsewhere).
``parse_config(text)`` decodes it as Neon's ``handleNewConfigMap`` (v0.1.13)
does with Go's ``encoding/json`` decoder: only the first JSON value is read
(trailing data is ignored), keys match field names case-insensitively (an
exact match first), unknown keys are errors (``json: unknown field "x"``), a
missing field is its zero value. Then it validates in Neon's order
(``config.validate``: nodeDefaults cpu/memory/computeUnit, overrides,
memBlockSize, schedulerName) and reports the first problem only, with Neon's
text: ``Invalid configuration: at <json.path>: <reason>``. Type errors are
reported by path too, in our words (Go's ``json: cannot unmarshal ...`` names
Go types). Quantities are exact: cpu in millicores, memory in bytes, never
floats.

``ignoredNamespaces`` is Neon's (v0.42+) spelling; ``ignoreNamespaces``
(v0.41.0, the one we accepted first) is read as the same, but not both.

``nodeMetricLabels`` (Neon v0.42+) maps metric label names to node label
keys; a name that is no valid Prometheus label name, or one the per-node
metrics already have (``node``, ``field``), is refused (Neon would panic at
start-up), and it cannot change at runtime (the metrics' label names are
fixed once exported).

``Config.node_config(name)`` picks the first override listing the node, else
the defaults; ``derive_node(node_config, allocatable)`` turns it into the
node's budget (``NodeBudget``). A whole new ``Config`` replaces the old one
at once, so every node's budget is recomputed from the same document: an
update is never half applied.

Invariants of a valid config: watermarks in (0, 1]; compute unit fields > 0;
``memBlockSize`` a whole number of bytes > 0; ``system`` >= 0 (the reference
demanded > 0, "value must be > 0"; allocatable already excludes the
kubelet's reservations, so 0 is meaningful here); score parameters in [0, 1].
"""

from __future__ import annotations

import enum
import json
import math
import re
import struct
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
    model_validator,
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
_ZERO = Decimal(0)


class _Model(BaseModel):
    """Decoded as Go's ``encoding/json`` fills a struct: keys matched to
    field names exactly, else case-insensitively (the last one for a field
    wins), null leaves the zero value, unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, strict=False)

    @model_validator(mode="before")
    @classmethod
    def _go_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        names = [field.alias or name for name, field in cls.model_fields.items()]
        folded = {name.lower(): name for name in names}
        exact = set(names)
        out: dict[str, Any] = {}
        for key, value in data.items():
            text = str(key)
            target = text if text in exact else folded.get(text.lower(), text)
            if value is None and target in exact:
                continue  # Go: null into a value field is a no-op
            out[target] = value
        return out


class ResourceConfig(_Model):
    watermark: float = 0.0
    system: Quantity = _ZERO


class ComputeUnit(_Model):
    """Whole vCPUs and memory slots, as in the reference (uint16 each)."""

    vcpus: int = Field(default=0, alias="vCPUs", ge=0, le=MAX_UINT16)
    mem: int = Field(default=0, ge=0, le=MAX_UINT16)


class NodeConfig(_Model):
    cpu: ResourceConfig = Field(default_factory=ResourceConfig)
    memory: ResourceConfig = Field(default_factory=ResourceConfig)
    compute_unit: ComputeUnit = Field(default_factory=ComputeUnit, alias="computeUnit")


class NodeOverride(_Model):
    nodes: tuple[str, ...] = ()
    config: NodeConfig = Field(default_factory=NodeConfig)


class ScoreCurve(enum.StrEnum):
    """``targetFill`` (later upstream, the default): peaks at ``scorePeak`` fill.
    ``nodeSize`` (v0.1.13): bigger nodes always win, free room ignored."""

    TARGET_FILL = "targetFill"
    NODE_SIZE = "nodeSize"


class Config(_Model):
    node_defaults: NodeConfig = Field(default_factory=NodeConfig, alias="nodeDefaults")
    node_overrides: tuple[NodeOverride, ...] = Field(default=(), alias="nodeOverrides")
    mem_block_size: Quantity = Field(default=_ZERO, alias="memBlockSize")
    scheduler_name: str = Field(default="", alias="schedulerName")
    do_migration: bool | None = Field(default=None, alias="doMigration")
    score_curve: ScoreCurve = Field(default=ScoreCurve.TARGET_FILL, alias="scoreCurve")
    score_peak: float = Field(default=0.8, alias="scorePeak", ge=0, le=1)
    min_usage_score: float = Field(default=0.5, alias="minUsageScore", ge=0, le=1)
    max_usage_score: float = Field(default=0.0, alias="maxUsageScore", ge=0, le=1)
    randomize: bool = False
    # Neon's ``ignoredNamespaces`` (v0.42+; ``ignoreNamespaces`` in v0.41.0,
    # which we shipped first: still accepted, not both): pods there are
    # treated as if they did not exist (Reserve allows them, nothing is
    # accounted), except that Filter counts them among the node's pods by
    # their requests.
    ignored_namespaces: tuple[str, ...] = Field(default=(), alias="ignoredNamespaces")
    ignore_namespaces_v041: tuple[str, ...] | None = Field(default=None, alias="ignoreNamespaces")
    # Neon's ``nodeMetricLabels`` (v0.42+): metric label name -> node label
    # key; each per-node metric gets these labels, valued from the node's
    # labels ("" when absent), ordered by metric label name.
    node_metric_labels: dict[str, str] = Field(default_factory=dict, alias="nodeMetricLabels")

    def metric_labels(self) -> tuple[tuple[str, str], ...]:
        """``nodeMetricLabels`` as Neon orders them (``buildNodeLabels``): by
        metric label name, then node label key."""
        return tuple(sorted(self.node_metric_labels.items()))

    def ignored(self, pod_key: str) -> bool:
        """Whether the pod (``namespace/name``) is in an ignored namespace."""
        namespaces = self.ignore_namespaces
        return bool(namespaces) and pod_key.split("/", 1)[0] in namespaces

    @property
    def ignore_namespaces(self) -> tuple[str, ...]:
        """The ignored namespaces, whichever spelling gave them."""
        return self.ignored_namespaces or self.ignore_namespaces_v041 or ()

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
    """Go's ``json: unknown field "x"`` for an unknown key (the decoder stops
    there, before any validation), else ``Invalid configuration: at <path>:
    <reason>`` for the first problem."""
    problems = error.errors()
    for problem in problems:
        if problem["type"] == "extra_forbidden":
            return f"json: unknown field {_go_quote(str(problem['loc'][-1]))}"
    first = problems[0]
    return f"Invalid configuration: at {_path(tuple(first['loc']))}: {_reason(first)}"


def _go_quote(text: str) -> str:
    """Go's ``%q`` for plain text (a JSON string is close enough)."""
    return orjson.dumps(text).decode()


def _float32(value: float) -> float:
    """The value as Go's ``float32`` field holds it (``1.00000001`` is 1)."""
    try:
        return float(struct.unpack("f", struct.pack("f", value))[0])
    except OverflowError:  # Go cannot decode it; out of (0, 1] anyway
        return math.copysign(math.inf, value)


def _resource_problem(config: ResourceConfig, *, memory: bool) -> tuple[str, str] | None:
    """``resourceConfig.validate`` (v0.1.13), except that ``system`` may be 0."""
    watermark = _float32(config.watermark)
    if watermark <= 0.0:
        return "watermark", "value must be > 0"
    if watermark > 1.0:
        return "watermark", "value must be <= 1"
    if config.system < 0:
        return "system", "value must be >= 0"
    if memory and config.system != config.system.to_integral_value():
        return "system", "value cannot have milli-precision"
    return None


def _node_problem(config: NodeConfig) -> tuple[str, str] | None:
    """``nodeConfig.validate`` (v0.1.13): cpu, memory, then the compute unit."""
    for name, resource in (("cpu", config.cpu), ("memory", config.memory)):
        problem = _resource_problem(resource, memory=name == "memory")
        if problem is not None:
            return f"{name}.{problem[0]}", problem[1]
    if config.compute_unit.vcpus == 0:
        return "computeUnit", "vCPUs must be non-zero"
    if config.compute_unit.mem == 0:
        return "computeUnit", "mem must be non-zero"
    return None


def first_problem(config: Config) -> tuple[str, str] | None:
    """``config.validate`` (v0.1.13): the first (path, reason), in its order."""
    problem = _node_problem(config.node_defaults)
    if problem is not None:
        return f"nodeDefaults.{problem[0]}", problem[1]
    for index, override in enumerate(config.node_overrides):
        if not override.nodes:
            return f"nodeOverrides[{index}].nodes", "array must be non-empty"
        problem = _node_problem(override.config)
        if problem is not None:
            return f"nodeOverrides[{index}].config.{problem[0]}", problem[1]
    if config.mem_block_size <= 0:
        return "memBlockSize", "value must be > 0"
    if config.mem_block_size != config.mem_block_size.to_integral_value():
        return "memBlockSize", "value cannot have milli-precision"
    if not config.scheduler_name:
        return "schedulerName", "string cannot be empty"
    if (
        config.ignore_namespaces_v041 is not None
        and "ignored_namespaces" in config.model_fields_set
    ):
        return (
            "ignoreNamespaces",
            "give ignoredNamespaces only (ignoreNamespaces is its older name)",
        )
    for metric_label in sorted(config.node_metric_labels):
        # Neon does not check these: client_golang panics at start-up on a
        # bad or duplicate label name. Here it is a config error.
        if not _LABEL_NAME.fullmatch(metric_label) or metric_label.startswith("__"):
            return f"nodeMetricLabels.{metric_label}", "not a valid Prometheus label name"
        if metric_label in RESERVED_METRIC_LABELS:
            return f"nodeMetricLabels.{metric_label}", "label name already used by node metrics"
    return None


_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
# The labels the per-node metrics already have.
RESERVED_METRIC_LABELS = frozenset({"node", "field"})


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid character {name[0]!r} looking for beginning of value")


_GO_WHITESPACE = " \t\n\r"


def _first_value(text: str | bytes) -> Any:
    """The first JSON value, as Go's ``Decoder.Decode`` reads it: what follows
    is never read (so never an error); ``NaN``/``Infinity`` are not JSON."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")  # Go: invalid UTF-8 -> U+FFFD
    stripped = text.lstrip(_GO_WHITESPACE)
    decoder = json.JSONDecoder(parse_constant=_reject_constant)
    value, _ = decoder.raw_decode(stripped)
    return value


def parse_config(text: str | bytes) -> Config:
    """Decode and validate a configuration document; raises ``ConfigError``."""
    try:
        document = _first_value(text)
    except ValueError as error:  # json.JSONDecodeError too
        raise ConfigError(f"Invalid configuration: bad JSON: {error}") from None
    if not isinstance(document, dict):
        raise ConfigError("Invalid configuration: at <root>: must be a JSON object")
    try:
        config = Config.model_validate(document)
    except ValidationError as error:
        raise ConfigError(validation_message(error)) from None
    problem = first_problem(config)
    if problem is not None:
        raise ConfigError(f"Invalid configuration: at {problem[0]}: {problem[1]}")
    return config


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
    if new.node_metric_labels != old.node_metric_labels:
        # The metrics' label names are fixed once exported (Neon reads its
        # config once).
        raise ConfigError(
            "Invalid configuration: at nodeMetricLabels: value cannot be changed at runtime"
        )


def config_from_config_map(config_map: Any, key: str) -> Config:
    """The config in ``config_map``'s ``data[key]``; raises ``ConfigError``."""
    data = (config_map or {}).get("data") or {}
    if key not in data:
        raise ConfigError(f"ConfigMap missing map key {_go_quote(key)}")
    return parse_config(data[key])
