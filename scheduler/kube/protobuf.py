"""Sans-I/O Kubernetes protobuf for the two writes made per scheduled pod.

Every bound pod costs the API server two writes from the scheduler: the
``pods/binding`` POST and the "Scheduled" event. kube-scheduler sends both as
``application/vnd.kubernetes.protobuf``, which the server decodes far more
cheaply than JSON (no strict field validation pass, no reflection over JSON
keys). This module encodes exactly those two kinds, plus the ``Status`` an
error answer carries, by hand from the field numbers of the upstream
``generated.proto`` files: no generated code and no protobuf dependency.

The envelope (apimachinery ``runtime/serializer/protobuf``): the 4-byte magic
``k8s\\x00`` then a ``runtime.Unknown`` message (1: TypeMeta{1: apiVersion,
2: kind}, 2: raw bytes of the object, 3: contentEncoding, 4: contentType).

Invariants:
- ``encode_event`` accepts only the fields it knows (the events.k8s.io/v1 Event
  that ``EventSink`` builds, with or without ``series``); anything else raises
  ``Unencodable``, and the caller sends that event as JSON instead, so a new
  field can never be dropped silently. A string that has no UTF-8 form (a
  lone surrogate) is refused the same way, by ``encode_binding`` too.
- Times are ``metav1.MicroTime`` (seconds, nanos) truncated to microseconds,
  the precision the JSON form carries, so both encodings store the same value.
- ``decode_status`` never raises: anything that is not a protobuf ``Status``
  yields None and the caller falls back to the raw text.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

PROTOBUF = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

_VARINT = 0
_LENGTH_DELIMITED = 2
_FIXED64 = 1
_FIXED32 = 5


class Unencodable(ValueError):
    """The object has a field this encoder does not know: send it as JSON."""


# ------------------------------------------------------------------ encoding
# One-byte varints (field tags, short lengths: nearly every one written here).
_SMALL_VARINTS = tuple(bytes((value,)) for value in range(0x80))


def _varint(value: int) -> bytes:
    if 0 <= value < 0x80:
        return _SMALL_VARINTS[value]
    if value < 0:
        value += 1 << 64  # int64/int32 negatives are ten-byte two's complement
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _bytes_field(number: int, payload: bytes) -> bytes:
    length = len(payload)
    size = _SMALL_VARINTS[length] if length < 0x80 else _varint(length)
    return _varint(number << 3 | _LENGTH_DELIMITED) + size + payload


def _string(number: int, value: str) -> bytes:
    if not value:
        return b""
    try:
        payload = value.encode()
    except UnicodeEncodeError as err:  # a lone surrogate has no UTF-8 form
        raise Unencodable(f"string field {number}: {err.reason}") from err
    return _bytes_field(number, payload)


def _int(number: int, value: int) -> bytes:
    return _varint(number << 3 | _VARINT) + _varint(value) if value else b""


def _envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = _string(1, api_version) + _string(2, kind)
    return MAGIC + _bytes_field(1, type_meta) + _bytes_field(2, raw)


_OBJECT_META = {"name": 1, "generateName": 2, "namespace": 3, "uid": 5}
_OBJECT_REFERENCE = {
    "kind": 1,
    "namespace": 2,
    "name": 3,
    "uid": 4,
    "apiVersion": 5,
    "resourceVersion": 6,
    "fieldPath": 7,
}


def _strings(fields: Mapping[str, Any], numbers: Mapping[str, int], what: str) -> bytes:
    out = b""
    for key, value in fields.items():
        number = numbers.get(key)
        if number is None or not isinstance(value, str):
            raise Unencodable(f"{what}.{key}")
        out += _string(number, value)
    return out


def _micro_time(number: int, value: Any, what: str) -> bytes:
    if not isinstance(value, str):
        raise Unencodable(what)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError as err:
        raise Unencodable(f"{what}: {value!r}") from err
    if moment.tzinfo is None:
        raise Unencodable(f"{what}: {value!r} has no time zone")
    seconds = int(moment.timestamp() // 1)
    nanos = moment.microsecond * 1000
    return _bytes_field(number, _int(1, seconds) + _int(2, nanos))


def encode_binding(pod_namespace: str, pod_name: str, pod_uid: str, node_name: str) -> bytes:
    """A ``v1.Binding`` of the pod (by uid when known) to ``node_name``.

    Raises ``Unencodable`` for a name without a UTF-8 form; the caller sends
    that binding as JSON."""
    metadata = _string(1, pod_name) + _string(3, pod_namespace) + _string(5, pod_uid)
    target = _string(1, "Node") + _string(3, node_name) + _string(5, "v1")
    return _envelope("v1", "Binding", _bytes_field(1, metadata) + _bytes_field(2, target))


_EVENT_STRINGS = {
    "reportingController": 4,
    "reportingInstance": 5,
    "action": 6,
    "reason": 7,
    "note": 10,
    "type": 11,
}


def encode_event(event: Mapping[str, Any]) -> bytes:
    """An events.k8s.io/v1 ``Event`` given as its JSON-shaped dict."""
    raw = b""
    for key, value in event.items():
        if key in ("apiVersion", "kind"):
            continue
        number = _EVENT_STRINGS.get(key)
        if number is not None:
            if not isinstance(value, str):
                raise Unencodable(key)
            raw += _string(number, value)
        elif key == "metadata":
            raw += _bytes_field(1, _strings(_mapping(value, key), _OBJECT_META, key))
        elif key == "eventTime":
            raw += _micro_time(2, value, key)
        elif key == "series":
            raw += _bytes_field(3, _series(_mapping(value, key)))
        elif key in ("regarding", "related"):
            reference = _strings(_mapping(value, key), _OBJECT_REFERENCE, key)
            raw += _bytes_field(8 if key == "regarding" else 9, reference)
        else:
            raise Unencodable(key)
    return _envelope("events.k8s.io/v1", "Event", raw)


def _mapping(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise Unencodable(what)
    return value


def _series(series: Mapping[str, Any]) -> bytes:
    out = b""
    for key, value in series.items():
        if key == "count" and isinstance(value, int) and not isinstance(value, bool):
            out += _int(1, value)
        elif key == "lastObservedTime":
            out += _micro_time(2, value, "series.lastObservedTime")
        else:
            raise Unencodable(f"series.{key}")
    return out


# ------------------------------------------------------------------ decoding
def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def read_fields(data: bytes) -> dict[int, int | bytes]:
    """One message's fields: the last value of each field number, a varint as
    an int and a length-delimited field as its bytes (enough for the scalars
    read here; nested messages are read by calling this again on the bytes).
    Raises ``ValueError`` on a malformed message."""
    fields: dict[int, int | bytes] = {}
    at = 0
    while at < len(data):
        key, at = _read_varint(data, at)
        number, wire_type = key >> 3, key & 7
        if wire_type == _VARINT:
            fields[number], at = _read_varint(data, at)
        elif wire_type == _LENGTH_DELIMITED:
            length, at = _read_varint(data, at)
            if at + length > len(data):
                raise ValueError("truncated field")
            fields[number] = data[at : at + length]
            at += length
        elif wire_type == _FIXED64:
            at += 8
        elif wire_type == _FIXED32:
            at += 4
        else:
            raise ValueError(f"wire type {wire_type}")
    if at != len(data):
        raise ValueError("truncated field")
    return fields


def _text(fields: Mapping[int, int | bytes], number: int) -> str:
    value = fields.get(number, b"")
    return value.decode(errors="replace") if isinstance(value, bytes) else ""


def decode_status(body: bytes) -> dict[str, Any] | None:
    """A protobuf ``metav1.Status`` as its JSON-shaped dict (kind, status,
    message, reason, code), or None if ``body`` is not one."""
    if not body.startswith(MAGIC):
        return None
    try:
        unknown = read_fields(body[len(MAGIC) :])
        type_meta = unknown.get(1, b"")
        raw = unknown.get(2, b"")
        if not isinstance(type_meta, bytes) or not isinstance(raw, bytes):
            return None
        if _text(read_fields(type_meta), 2) != "Status":
            return None
        status = read_fields(raw)
    except ValueError:
        return None
    code = status.get(6, 0)
    return {
        "kind": "Status",
        "status": _text(status, 2),
        "message": _text(status, 3),
        "reason": _text(status, 4),
        "code": code if isinstance(code, int) else 0,
    }
