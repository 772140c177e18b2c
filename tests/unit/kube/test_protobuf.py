"""The hand-written protobuf of the two per-pod writes and of error Status.

Field numbers are checked against a table copied from the upstream
``generated.proto`` files (k8s.io/api core/v1 and events/v1, apimachinery
meta/v1 and runtime) by a reader written here, independent of the encoder.
That the real API server accepts the bytes is proven in
``tests/integration/test_kube_client.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.kube.errors import ApiError
from scheduler.kube.protobuf import (
    MAGIC,
    Unencodable,
    decode_status,
    encode_binding,
    encode_event,
)
from scheduler.kube.wire import error_from_response

# message -> field number -> (name, nested message or None); from generated.proto.
SCHEMA: dict[str, dict[int, tuple[str, str | None]]] = {
    "Unknown": {1: ("typeMeta", "TypeMeta"), 2: ("raw", "bytes")},
    "TypeMeta": {1: ("apiVersion", None), 2: ("kind", None)},
    "ObjectMeta": {
        1: ("name", None),
        2: ("generateName", None),
        3: ("namespace", None),
        5: ("uid", None),
    },
    "ObjectReference": {
        1: ("kind", None),
        2: ("namespace", None),
        3: ("name", None),
        4: ("uid", None),
        5: ("apiVersion", None),
        6: ("resourceVersion", None),
        7: ("fieldPath", None),
    },
    "Binding": {1: ("metadata", "ObjectMeta"), 2: ("target", "ObjectReference")},
    "MicroTime": {1: ("seconds", "int"), 2: ("nanos", "int")},
    "EventSeries": {1: ("count", "int"), 2: ("lastObservedTime", "MicroTime")},
    "Event": {
        1: ("metadata", "ObjectMeta"),
        2: ("eventTime", "MicroTime"),
        3: ("series", "EventSeries"),
        4: ("reportingController", None),
        5: ("reportingInstance", None),
        6: ("action", None),
        7: ("reason", None),
        8: ("regarding", "ObjectReference"),
        9: ("related", "ObjectReference"),
        10: ("note", None),
        11: ("type", None),
    },
}


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def read(data: bytes, message: str) -> dict[str, Any]:
    """Decode ``data`` as ``message`` of SCHEMA; an unknown field fails the test."""
    out: dict[str, Any] = {}
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        name, nested = SCHEMA[message][key >> 3]
        if key & 7 == 0:
            out[name], at = _varint(data, at)
            continue
        assert key & 7 == 2, f"{message}.{name}: wire type {key & 7}"
        length, at = _varint(data, at)
        payload = data[at : at + length]
        at += length
        if nested == "bytes":
            out[name] = payload
        elif nested is None:
            out[name] = payload.decode()
        else:
            out[name] = read(payload, nested)
    return out


def unwrap(data: bytes, kind: str) -> dict[str, Any]:
    assert data.startswith(MAGIC)
    unknown = read(data[len(MAGIC) :], "Unknown")
    return {"typeMeta": unknown["typeMeta"], "object": read(unknown["raw"], kind)}


@pytest.mark.parametrize(
    ("uid", "metadata"),
    [
        pytest.param("u-1", {"name": "p", "namespace": "ns", "uid": "u-1"}, id="by uid"),
        pytest.param("", {"name": "p", "namespace": "ns"}, id="no uid: empty field left out"),
    ],
)
def test_binding_carries_the_pod_and_the_node(uid: str, metadata: dict[str, str]) -> None:
    decoded = unwrap(encode_binding("ns", "p", uid, "node-1"), "Binding")
    assert decoded == {
        "typeMeta": {"apiVersion": "v1", "kind": "Binding"},
        "object": {
            "metadata": metadata,
            "target": {"kind": "Node", "name": "node-1", "apiVersion": "v1"},
        },
    }


EVENT: dict[str, Any] = {
    "apiVersion": "events.k8s.io/v1",
    "kind": "Event",
    "metadata": {"name": "p.187a", "namespace": "ns"},
    "eventTime": "2026-12-01T10:20:30.123456Z",
    "reportingController": "pyscheduler",
    "reportingInstance": "pyscheduler-host",
    "action": "Binding",
    "reason": "Scheduled",
    "type": "Normal",
    "note": "Successfully assigned ns/p to node-1 ✓",
    "regarding": {"apiVersion": "v1", "kind": "Pod", "name": "p", "namespace": "ns", "uid": "u"},
}
EVENT_TIME = {"seconds": 1796120430, "nanos": 123456000}


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        pytest.param(
            EVENT,
            {
                **{k: v for k, v in EVENT.items() if k not in ("apiVersion", "kind")},
                "eventTime": EVENT_TIME,
            },
            id="the Scheduled event, every field",
        ),
        pytest.param(
            {
                "metadata": {"name": "e", "namespace": "ns"},
                "eventTime": "2026-12-01T10:20:30.000000Z",
                "series": {"count": 300, "lastObservedTime": "2026-12-01T10:20:31.5Z"},
                "related": {"kind": "Node", "name": "n"},
            },
            {
                "metadata": {"name": "e", "namespace": "ns"},
                "eventTime": {"seconds": 1796120430},
                "series": {
                    "count": 300,
                    "lastObservedTime": {"seconds": 1796120431, "nanos": 500000000},
                },
                "related": {"kind": "Node", "name": "n"},
            },
            id="series re-created after expiry, zero nanos left out, multi-byte varint",
        ),
    ],
)
def test_event_fields_land_on_their_proto_numbers(
    event: dict[str, Any], expected: dict[str, Any]
) -> None:
    decoded = unwrap(encode_event(event), "Event")
    assert decoded == {
        "typeMeta": {"apiVersion": "events.k8s.io/v1", "kind": "Event"},
        "object": expected,
    }


@pytest.mark.parametrize(
    "event",
    [
        pytest.param({**EVENT, "deprecatedCount": 2}, id="a field the encoder does not know"),
        pytest.param({**EVENT, "metadata": {"name": "e", "labels": {"a": "b"}}}, id="labels"),
        pytest.param(
            {**EVENT, "regarding": {"kind": "Pod", "extra": "x"}}, id="unknown reference key"
        ),
        pytest.param({**EVENT, "note": 7}, id="a string field that is not a string"),
        pytest.param({**EVENT, "eventTime": "yesterday"}, id="unparseable time"),
        pytest.param({**EVENT, "eventTime": "2026-12-01T10:20:30"}, id="time without zone"),
        pytest.param({**EVENT, "series": {"count": True}}, id="boolean count"),
        pytest.param({**EVENT, "metadata": "e"}, id="metadata not a mapping"),
        pytest.param({**EVENT, "note": "bad \udc80 text"}, id="a lone surrogate in a string"),
        pytest.param(
            {**EVENT, "regarding": {"kind": "Pod", "name": "p\ud800"}},
            id="a lone surrogate in a reference",
        ),
    ],
)
def test_an_event_it_cannot_carry_exactly_is_refused(event: dict[str, Any]) -> None:
    with pytest.raises(Unencodable):
        encode_event(event)


@pytest.mark.parametrize(
    ("namespace", "name", "uid", "node"),
    [
        pytest.param("ns\udc80", "p", "u", "n", id="namespace"),
        pytest.param("ns", "p\ud800", "u", "n", id="pod name"),
        pytest.param("ns", "p", "u", "n\udfff", id="node name"),
    ],
)
def test_a_binding_with_a_lone_surrogate_is_refused_for_json_instead(
    namespace: str, name: str, uid: str, node: str
) -> None:
    with pytest.raises(Unencodable):
        encode_binding(namespace, name, uid, node)


def _field(number: int, payload: bytes | int) -> bytes:
    if isinstance(payload, int):
        return bytes([number << 3]) + bytes([payload & 0x7F | 0x80, payload >> 7])
    return bytes([number << 3 | 2, len(payload)]) + payload


def status_bytes(kind: str = "Status", code: int = 409) -> bytes:
    type_meta = _field(1, b"v1") + _field(2, kind.encode())
    status = (
        _field(1, b"")
        + _field(2, b"Failure")
        + _field(3, b'pods "p" is already assigned to node "n"')
        + _field(4, b"Conflict")
        + _field(5, _field(1, b"p") + _field(3, b"pods"))
        + _field(6, code)
    )
    return MAGIC + _field(1, type_meta) + _field(2, status) + _field(3, b"") + _field(4, b"")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            status_bytes(),
            {
                "kind": "Status",
                "status": "Failure",
                "message": 'pods "p" is already assigned to node "n"',
                "reason": "Conflict",
                "code": 409,
            },
            id="a Status",
        ),
        pytest.param(status_bytes(kind="Pod"), None, id="another kind"),
        pytest.param(status_bytes()[:-5], None, id="truncated"),
        pytest.param(b'{"kind":"Status"}', None, id="JSON"),
        pytest.param(MAGIC + b"\x0f", None, id="unknown wire type"),
        pytest.param(b"", None, id="empty"),
    ],
)
def test_decode_status(body: bytes, expected: dict[str, Any] | None) -> None:
    assert decode_status(body) == expected


def test_an_error_answer_in_protobuf_becomes_the_same_api_error_as_json() -> None:
    error = error_from_response(409, status_bytes())
    assert (error.status, error.reason, error.message) == (
        409,
        "Conflict",
        'pods "p" is already assigned to node "n"',
    )
    assert isinstance(error, ApiError)
