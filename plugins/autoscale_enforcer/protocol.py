"""The agent<->plugin wire protocol, every version from v1.0 to v5.0. Sans-I/O.

``parse_request(body, slot_bytes)`` turns a request body into a
``WireRequest`` in exact units, or raises ``ProtocolError`` with the status
and text body the reference answers; ``encode_response`` writes the answer in
the request's version. Units on the wire, by ``protoVersion``:

| version | int | ``vCPUs`` | ``mem`` | other |
| --- | --- | --- | --- | --- |
| v1.0 | 1 | whole vCPUs (uint16) | memory slots (uint16) | ``metrics`` required |
| v1.1 | 2 | whole vCPUs | slots | ``metrics`` may be null |
| v2.0 | 3 | millicpu quantity | slots | |
| v2.1 | 4 | millicpu | slots | request carries ``lastPermit`` |
| v3.0 | 5 | millicpu | slots | response drops ``resourceUnit`` |
| v4.0 | 6 | millicpu | bytes (quantity) | request carries ``computeUnit`` |
| v5.0 | 7 | millicpu | bytes | ``metrics`` is ``{loadAvg1M}`` only |

Rules (Go's decoder, which the agents were written against): JSON keys match
case-insensitively, unknown keys are ignored, a missing field is its zero
value; a wrong type, a negative or overflowing number is ``bad JSON``. Bodies
are cut at ``MAX_HTTP_BODY_SIZE`` bytes by the transport (so a larger one is
bad JSON). A zero compute unit from v4.0 is refused with Neon's text
(``handleAgentRequest``, v0.41.0); beyond the reference, zero ``vCPUs``/``mem``
resources are refused too: they could only lead to a permit with a zero
field, which agents reject.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from plugins.autoscale_enforcer.state import Amounts
from scheduler.framework.quantity import QuantityError, parse_quantity

CONTENT_TYPE_JSON = "application/json"
CONTENT_TYPE_ERROR = "text/plain"
MAX_HTTP_BODY_SIZE = 1 << 10

MILLI_PER_CPU = 1000
_UINT16 = 2**16 - 1
_UINT32 = 2**32 - 1
_UINT64 = 2**64 - 1
_FLOAT32_MAX = 3.4028234663852886e38


class ProtoVersion(enum.IntEnum):
    V1_0 = 1
    V1_1 = 2
    V2_0 = 3
    V2_1 = 4
    V3_0 = 5
    V4_0 = 6
    V5_0 = 7


MIN_VERSION = ProtoVersion.V1_0
MAX_VERSION = ProtoVersion.V5_0


def version_string(version: int) -> str:
    """The reference's rendering: ``v1.1``, ``<invalid: zero>``, ``<unknown = v5.0 + 2>``."""
    if version == 0:
        return "<invalid: zero>"
    if MIN_VERSION <= version <= MAX_VERSION:
        name = ProtoVersion(version).name  # V2_1
        return "v" + name[1:].replace("_", ".")
    return f"<unknown = {version_string(MAX_VERSION)} + {version - MAX_VERSION}>"


class ProtocolError(Exception):
    """A refused request: the status and the text body to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


BAD_JSON = "bad JSON"


def _bad() -> ProtocolError:
    return ProtocolError(400, BAD_JSON)


@dataclass(frozen=True, slots=True)
class WireRequest:
    version: ProtoVersion
    namespace: str
    name: str
    resources: Amounts
    compute_unit: Amounts | None  # v4.0+
    last_permit: Amounts | None  # v2.1+
    metrics: float | None  # loadAvg1M; None = no metrics

    @property
    def pod_key(self) -> str:
        return f"{self.namespace}/{self.name}"


# ----------------------------------------------------------------- decoding
def _fold(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Keys folded to lower case, as Go matches them (the last one wins)."""
    return {key.lower(): value for key, value in obj.items()}


def _object(value: Any) -> dict[str, Any] | None:
    """A JSON object (folded) or null; anything else is bad JSON."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _bad()
    return _fold(value)


def _uint(value: Any, limit: int) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limit:
        raise _bad()
    return value


# Parsed quantities (strings and ints) by (type, value, milli, limit): agents
# send the same few sizes ("2Gi", 1500m) over and over, and parsing one exactly
# costs more than the rest of a request. Pure, so a bounded memo is safe
# (cleared when full); refused values raise every time, never memoized.
_QUANTITIES: dict[tuple[type, Any, bool, int], int] = {}
_QUANTITY_MEMO_SIZE = 4096


def _quantity(value: Any, *, milli: bool, limit: int) -> int:
    """A Kubernetes quantity (string or JSON number) in millis or units, rounded up."""
    if value is None:
        return 0
    kind = type(value)
    if kind is not str and kind is not int:  # floats, bools, containers: not memoized
        return _parse_quantity(value, milli=milli, limit=limit)
    key = (kind, value, milli, limit)
    known = _QUANTITIES.get(key)
    if known is not None:
        return known
    parsed = _parse_quantity(value, milli=milli, limit=limit)
    if len(_QUANTITIES) >= _QUANTITY_MEMO_SIZE:
        _QUANTITIES.clear()
    _QUANTITIES[key] = parsed
    return parsed


def _parse_quantity(value: Any, *, milli: bool, limit: int) -> int:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _bad()
    if isinstance(value, float) and not math.isfinite(value):
        raise _bad()
    try:
        exact = parse_quantity(str(value) if not isinstance(value, float) else repr(value))
    except (QuantityError, ValueError, ArithmeticError):
        raise _bad() from None
    if exact < 0 or exact.is_nan():
        raise _bad()
    scaled = exact * MILLI_PER_CPU if milli else exact
    if scaled > limit:
        raise _bad()
    return int(scaled.to_integral_value(rounding="ROUND_CEILING"))


def _float32(value: Any) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad()
    number = float(value)
    if not math.isfinite(number) or abs(number) > _FLOAT32_MAX:
        raise _bad()
    return number


def _resources(value: Any, version: ProtoVersion, slot_bytes: int) -> Amounts | None:
    obj = _object(value)
    if obj is None:
        return None
    if version >= ProtoVersion.V2_0:
        cpu = _quantity(obj.get("vcpus"), milli=True, limit=_UINT32)
    else:
        cpu = _uint(obj.get("vcpus"), _UINT16) * MILLI_PER_CPU
    if version >= ProtoVersion.V4_0:
        mem = _quantity(obj.get("mem"), milli=False, limit=_UINT64)
    else:
        mem = _uint(obj.get("mem"), _UINT16) * slot_bytes
    return Amounts(cpu, mem)


def _version(document: Mapping[str, Any]) -> ProtoVersion:
    version = _uint(document.get("protoversion"), _UINT32)
    if version == 0:
        raise ProtocolError(400, f"Invalid protocol version {version_string(0)}")
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise ProtocolError(
            400,
            f"Protocol version mismatch: Need {version_string(MIN_VERSION)} to "
            f"{version_string(MAX_VERSION)} but got {version_string(version)}",
        )
    return ProtoVersion(version)


def parse_request(body: bytes, slot_bytes: int) -> WireRequest:
    """Decode and validate one request body; raises ``ProtocolError``."""
    try:
        raw = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise _bad() from None
    document = _object(raw)
    if document is None:
        raise _bad()
    version = _version(document)
    pod = _object(document.get("pod")) or {}
    namespace, name = pod.get("namespace") or "", pod.get("name") or ""
    if not isinstance(namespace, str) or not isinstance(name, str):
        raise _bad()
    resources = _resources(document.get("resources"), version, slot_bytes) or Amounts()
    last_permit = None
    if version >= ProtoVersion.V2_1:
        last_permit = _resources(document.get("lastpermit"), version, slot_bytes)
    compute_unit = None
    if version >= ProtoVersion.V4_0:
        compute_unit = _resources(document.get("computeunit"), version, slot_bytes) or Amounts()
    metrics_obj = _object(document.get("metrics"))
    metrics = None
    if metrics_obj is not None:
        metrics = _float32(metrics_obj.get("loadavg1m"))
        if version < ProtoVersion.V5_0:  # type-checked as the agent's struct had them
            _float32(metrics_obj.get("loadavg5m"))
            _float32(metrics_obj.get("memoryusagebytes"))
    if metrics is None and version < ProtoVersion.V1_1:
        raise ProtocolError(
            400, f"nil metrics not supported for protocol version {version_string(version)}"
        )
    if resources.has_zero():
        raise ProtocolError(400, "invalid resources: vCPUs and mem must be non-zero")
    if compute_unit is not None and compute_unit.has_zero():
        # handleAgentRequest (v0.41.0): Resources.ValidateNonZero, vCPUs first.
        which = "vCPUs" if compute_unit.cpu == 0 else "mem"
        raise ProtocolError(400, f"computeUnit fields must be non-zero: {which} must be non-zero")
    return WireRequest(
        version=version,
        namespace=namespace,
        name=name,
        resources=resources,
        compute_unit=compute_unit,
        last_permit=last_permit,
        metrics=metrics,
    )


# ----------------------------------------------------------------- encoding
def granularity(version: ProtoVersion, slot_bytes: int) -> Amounts:
    """The smallest amounts this version can express (permits must be multiples)."""
    cpu = 1 if version >= ProtoVersion.V2_0 else MILLI_PER_CPU
    mem = 1 if version >= ProtoVersion.V4_0 else slot_bytes
    return Amounts(cpu, mem)


_BINARY_SUFFIXES = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20))


def _milli_cpu(milli: int) -> int | str:
    return milli // MILLI_PER_CPU if milli % MILLI_PER_CPU == 0 else f"{milli}m"


def _bytes(count: int) -> int | str:
    if count < 1024:
        return count
    for suffix, size in (*_BINARY_SUFFIXES, ("Ki", 2**10)):
        if count % size == 0:
            return f"{count // size}{suffix}"
    return str(count)


def go_resources(amounts: Amounts) -> str:
    """``api.Resources`` as Go's ``%v`` prints it in Neon's error texts:
    ``{0.25 1536Mi}`` (vCPUs as a float, memory as a binary quantity)."""
    cpu = repr(amounts.cpu / MILLI_PER_CPU).removesuffix(".0")
    return f"{{{cpu} {go_bytes(amounts.mem)}}}"


def go_bytes(count: int) -> str:
    """``api.Bytes`` as Go's ``%v`` prints it (``1Gi``, ``1536Mi``, ``1000``)."""
    return str(_bytes(count))


def encode_resources(amounts: Amounts, version: ProtoVersion, slot_bytes: int) -> dict[str, Any]:
    """``{"vCPUs": ..., "mem": ...}`` in the version's units (exact multiples assumed)."""
    fractional = version >= ProtoVersion.V2_0
    cpu = _milli_cpu(amounts.cpu) if fractional else amounts.cpu // MILLI_PER_CPU
    mem = _bytes(amounts.mem) if version >= ProtoVersion.V4_0 else amounts.mem // slot_bytes
    return {"vCPUs": cpu, "mem": mem}


def encode_response(
    version: ProtoVersion, permit: Amounts, migrate: bool, unit: Amounts, slot_bytes: int
) -> bytes:
    response: dict[str, Any] = {"permit": encode_resources(permit, version, slot_bytes)}
    if migrate:
        response["migrate"] = {}
    if version < ProtoVersion.V3_0:
        response["resourceUnit"] = encode_resources(unit, version, slot_bytes)
    return orjson.dumps(response)
