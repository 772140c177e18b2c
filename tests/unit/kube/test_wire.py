"""The sans-I/O protocol halves: watch lines, Status bodies, queries, bodies."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from scheduler.kube.errors import ApiError
from scheduler.kube.wire import (
    LineSplitter,
    MalformedResponse,
    binding_body,
    decode_json,
    encode_json,
    error_from_response,
    list_query,
    parse_watch_line,
    watch_query,
)


@pytest.mark.parametrize(
    ("chunks", "lines", "pending"),
    [
        pytest.param([b'{"a":1}\n'], [b'{"a":1}'], b"", id="one whole line"),
        pytest.param([b'{"a":', b"1}\n"], [b'{"a":1}'], b"", id="line split across chunks"),
        pytest.param([b"x\ny\nz"], [b"x", b"y"], b"z", id="partial tail held back"),
        pytest.param([b"x\n", b"\n", b"  \n", b"y\n"], [b"x", b"y"], b"", id="blank lines dropped"),
        pytest.param([b"ab", b"c", b"d\nef\n"], [b"abcd", b"ef"], b"", id="many small chunks"),
        pytest.param([b""], [], b"", id="empty chunk"),
    ],
)
def test_line_splitter_reassembles_lines(
    chunks: list[bytes], lines: list[bytes], pending: bytes
) -> None:
    splitter = LineSplitter()
    got = [line for chunk in chunks for line in splitter.feed(chunk)]
    assert got == lines
    assert splitter.pending == pending


def test_line_splitter_refuses_an_endless_line() -> None:
    splitter = LineSplitter(max_line_bytes=8)
    with pytest.raises(MalformedResponse):
        splitter.feed(b"0123456789")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param(
            b'{"type":"ADDED","object":{"metadata":{"name":"a"}}}',
            {"type": "ADDED", "object": {"metadata": {"name": "a"}}},
            id="added",
        ),
        pytest.param(
            b'{"type":"ERROR","object":{"kind":"Status","code":410}}',
            {"type": "ERROR", "object": {"kind": "Status", "code": 410}},
            id="error event passes through",
        ),
    ],
)
def test_parse_watch_line_returns_raw_event(line: bytes, expected: dict[str, Any]) -> None:
    assert parse_watch_line(line) == expected


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(b"{not json", id="not json"),
        pytest.param(b"[1,2]", id="not an object"),
        pytest.param(b'{"type":"ADDED"}', id="no object"),
        pytest.param(b'{"type":1,"object":{}}', id="type not a string"),
        pytest.param(b'{"type":"ADDED","object":"x"}', id="object not a dict"),
    ],
)
def test_parse_watch_line_rejects_non_events(line: bytes) -> None:
    with pytest.raises(MalformedResponse):
        parse_watch_line(line)


def _status(code: int, reason: str, message: str) -> bytes:
    return orjson.dumps(
        {"kind": "Status", "status": "Failure", "code": code, "reason": reason, "message": message}
    )


@pytest.mark.parametrize(
    ("http_status", "body", "status", "reason", "message"),
    [
        pytest.param(
            409,
            _status(409, "Conflict", "pod p is already assigned"),
            409,
            "Conflict",
            "pod p is already assigned",
            id="status body",
        ),
        pytest.param(
            200,
            _status(410, "Expired", "too old resource version"),
            410,
            "Expired",
            "too old resource version",
            id="code in body wins",
        ),
        pytest.param(503, b"upstream gone", 503, "ServiceUnavailable", "upstream gone", id="text"),
        pytest.param(404, b"", 404, "NotFound", "", id="empty body"),
        pytest.param(599, b"{}", 599, "Unknown", "{}", id="json but not a Status"),
    ],
)
def test_error_from_response_reads_status_bodies(
    http_status: int, body: bytes, status: int, reason: str, message: str
) -> None:
    error = error_from_response(http_status, body)
    assert (error.status, error.reason, error.message) == (status, reason, message)


@pytest.mark.parametrize(
    ("error", "gone", "retriable"),
    [
        pytest.param(ApiError(410, "Expired", ""), True, False, id="410 expired"),
        pytest.param(ApiError(500, "Expired", ""), True, True, id="expired reason"),
        pytest.param(ApiError(429, "TooManyRequests", ""), False, True, id="throttled"),
        pytest.param(ApiError(503, "ServiceUnavailable", ""), False, True, id="unavailable"),
        pytest.param(ApiError(409, "Conflict", ""), False, False, id="conflict"),
        pytest.param(ApiError(403, "Forbidden", ""), False, False, id="forbidden"),
    ],
)
def test_api_error_classification(error: ApiError, gone: bool, retriable: bool) -> None:
    assert (error.gone, error.retriable) == (gone, retriable)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        pytest.param(
            {"resource_version": None, "limit": 500, "continue_": None},
            {"limit": "500"},
            id="first page, consistent read",
        ),
        pytest.param(
            {"resource_version": "0", "limit": 0, "continue_": None},
            {"resourceVersion": "0"},
            id="from cache, no limit",
        ),
        pytest.param(
            {"resource_version": "12", "limit": 100, "continue_": "tok"},
            {"limit": "100", "continue": "tok"},
            id="continue drops resourceVersion",
        ),
        pytest.param(
            {
                "resource_version": None,
                "limit": 10,
                "continue_": None,
                "label_selector": "app=x",
                "field_selector": "spec.nodeName!=",
            },
            {"limit": "10", "labelSelector": "app=x", "fieldSelector": "spec.nodeName!="},
            id="selectors",
        ),
    ],
)
def test_list_query(kwargs: dict[str, Any], expected: dict[str, str]) -> None:
    kwargs.setdefault("label_selector", None)
    kwargs.setdefault("field_selector", None)
    assert list_query(**kwargs) == expected


@pytest.mark.parametrize(
    ("bookmarks", "expected"),
    [
        pytest.param(
            True,
            {
                "watch": "true",
                "resourceVersion": "7",
                "timeoutSeconds": "300",
                "allowWatchBookmarks": "true",
            },
            id="with bookmarks",
        ),
        pytest.param(
            False,
            {"watch": "true", "resourceVersion": "7", "timeoutSeconds": "300"},
            id="without bookmarks",
        ),
    ],
)
def test_watch_query(bookmarks: bool, expected: dict[str, str]) -> None:
    assert (
        watch_query(resource_version="7", timeout_seconds=300, allow_bookmarks=bookmarks)
        == expected
    )


def test_binding_body_carries_the_pod_uid_as_precondition() -> None:
    assert binding_body("ns", "p", "u-1", "n1") == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p", "namespace": "ns", "uid": "u-1"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
    }


@pytest.mark.parametrize(
    ("body", "encoded"),
    [
        pytest.param({"a": [1, "x"]}, b'{"a":[1,"x"]}', id="dict"),
        pytest.param(b"raw", b"raw", id="bytes pass through"),
        pytest.param("text", b"text", id="str encoded"),
    ],
)
def test_encode_json(body: Any, encoded: bytes) -> None:
    assert encode_json(body) == encoded


def test_decode_json_of_empty_body_is_none() -> None:
    assert decode_json(b"") is None
    with pytest.raises(MalformedResponse):
        decode_json(b"<html>")
