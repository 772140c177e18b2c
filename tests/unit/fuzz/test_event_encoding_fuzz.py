"""``encode_event`` against events shaped as ``EventSink`` builds them (any
text, any time, with or without a series and a related object): the protobuf
decodes, field by field, to what was given (times read independently from
the RFC 3339 text), carries only the field numbers of events.k8s.io/v1
``Event``, omits empty strings and zero counts as proto3 does, and anything
the encoder cannot carry (an unknown field, a wrong type, a lone surrogate)
is refused with ``Unencodable`` so the caller sends JSON."""

from __future__ import annotations

import calendar
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.kube.events import micro_time, truncate_note
from scheduler.kube.protobuf import MAGIC, Unencodable, encode_event, read_fields
from tests.unit.fuzz.strategies import examples

FUZZ = settings(
    max_examples=examples(100),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
texts = st.text(max_size=40)
names = st.text(st.characters(codec="ascii", categories=["Ll", "Nd"]), min_size=1, max_size=20)
walls = st.floats(min_value=0, max_value=2**33, allow_nan=False, allow_infinity=False)
REFERENCE_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion")
REFERENCE_NUMBERS = {"kind": 1, "namespace": 2, "name": 3, "uid": 4, "apiVersion": 5}
REFERENCE_NUMBERS["resourceVersion"] = 6
STRING_NUMBERS = {
    "reportingController": 4,
    "reportingInstance": 5,
    "action": 6,
    "reason": 7,
    "note": 10,
    "type": 11,
}
EVENT_NUMBERS = {1, 2, 3, 8, 9, *STRING_NUMBERS.values()}

references = st.dictionaries(st.sampled_from(REFERENCE_FIELDS), texts, max_size=6)


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    event: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": draw(names), "namespace": draw(names)},
        "eventTime": micro_time(draw(walls)),
        "regarding": draw(references),
    }
    for key in STRING_NUMBERS:
        event[key] = draw(texts)
    event["note"] = truncate_note(draw(st.text(max_size=400)))
    if draw(st.booleans()):
        event["related"] = draw(references)
    if draw(st.booleans()):
        count = draw(st.integers(min_value=0, max_value=2**31 - 1))
        event["series"] = {"count": count, "lastObservedTime": micro_time(draw(walls))}
    return event


def _message(fields: dict[int, int | bytes], number: int) -> dict[int, int | bytes]:
    value = fields.get(number, b"")
    assert isinstance(value, bytes)
    return read_fields(value)


def _time(text: str) -> tuple[int, int]:
    """(seconds, nanos) of an RFC 3339 time with microseconds, read without
    the encoder's parser."""
    seconds = calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S"))
    return seconds, int(text[20:26]) * 1000


def _time_fields(seconds: int, nanos: int) -> dict[int, int | bytes]:
    return {k: v for k, v in ((1, seconds), (2, nanos)) if v}


@FUZZ
@given(events())
def test_an_event_decodes_field_by_field_to_what_was_encoded(event: dict[str, Any]) -> None:
    body = encode_event(event)
    assert body.startswith(MAGIC)
    envelope = read_fields(body[len(MAGIC) :])
    assert set(envelope) == {1, 2}
    assert _message(envelope, 1) == {1: b"events.k8s.io/v1", 2: b"Event"}
    raw = _message(envelope, 2)
    assert set(raw) <= EVENT_NUMBERS

    meta = _message(raw, 1)
    assert meta == {
        1: event["metadata"]["name"].encode(),
        3: event["metadata"]["namespace"].encode(),
    }
    assert _message(raw, 2) == _time_fields(*_time(event["eventTime"]))
    for key, number in STRING_NUMBERS.items():
        assert raw.get(number, b"") == event[key].encode()
        assert raw.get(number) != b"", f"{key}: an empty string is omitted"
    for key, number in (("regarding", 8), ("related", 9)):
        given_reference = event.get(key, {})
        decoded = _message(raw, number)
        assert decoded == {
            REFERENCE_NUMBERS[field]: value.encode()
            for field, value in given_reference.items()
            if value
        }
    series = event.get("series")
    if series is None:
        assert 3 not in raw
    else:
        decoded = _message(raw, 3)
        assert decoded.get(1, 0) == series["count"]
        assert decoded.get(1) != 0, "a zero count is omitted"
        assert _message(decoded, 2) == _time_fields(*_time(series["lastObservedTime"]))
    assert len(event["note"].encode()) <= 1024


@st.composite
def spoiled(draw: st.DrawFn) -> dict[str, Any]:
    """A valid event with one thing the encoder cannot carry."""
    event = draw(events())
    how = draw(st.sampled_from(["unknown field", "wrong type", "lone surrogate", "bad time"]))
    if how == "unknown field":
        event[draw(st.sampled_from(["deprecatedCount", "x", "Note"]))] = draw(texts)
    elif how == "wrong type":
        key = draw(st.sampled_from([*STRING_NUMBERS, "metadata", "regarding"]))
        event[key] = draw(st.one_of(st.integers(), st.none(), st.lists(st.integers(), max_size=2)))
    elif how == "lone surrogate":
        key = draw(st.sampled_from(list(STRING_NUMBERS)))
        event[key] = draw(texts) + "\ud800"
    else:
        event["eventTime"] = draw(st.sampled_from(["", "yesterday", "2024-01-01T00:00:00"]))
    return event


@FUZZ
@given(spoiled())
def test_what_protobuf_cannot_carry_is_refused_for_json(event: dict[str, Any]) -> None:
    with pytest.raises(Unencodable):
        encode_event(event)
