"""configure_logging: JSON lines or text, structured extras, idempotent on the root logger."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from scheduler.ops.logsetup import configure_logging, parse_level

TS = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"


class Opaque:
    def __str__(self) -> str:
        return "<opaque>"


@pytest.fixture(autouse=True)
def restore_root() -> Iterator[None]:
    """configure_logging changes the root logger by design; undo it after each test."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
    root.setLevel(level)


@pytest.fixture
def stream() -> io.StringIO:
    return io.StringIO()


def lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


@pytest.mark.parametrize(
    ("extra", "fields"),
    [
        pytest.param({}, {}, id="no extras"),
        pytest.param(
            {"pod": "ns/web-0", "node": "n1", "attempts": 3},
            {"pod": "ns/web-0", "node": "n1", "attempts": 3},
            id="structured extras",
        ),
        pytest.param({"nodes": ["a", "b"]}, {"nodes": ["a", "b"]}, id="list extra"),
        pytest.param({"level": "x"}, {"extra.level": "x"}, id="clashing extra renamed"),
        pytest.param({"thing": Opaque()}, {"thing": "<opaque>"}, id="unencodable extra as str"),
        pytest.param({"big": 2**70}, {"big": str(2**70)}, id="integer beyond 64 bits"),
    ],
)
def test_json_line(stream: io.StringIO, extra: dict[str, Any], fields: dict[str, Any]) -> None:
    configure_logging("info", json=True, stream=stream)

    logging.getLogger("scheduler.test").info("bound %s to %s", "web-0", "n1", extra=extra)

    [line] = lines(stream)
    entry = orjson.loads(line)
    assert re.fullmatch(TS, entry.pop("ts"))
    assert entry == {
        "level": "INFO",
        "logger": "scheduler.test",
        "msg": "bound web-0 to n1",
        **fields,
    }


def test_json_exception(stream: io.StringIO) -> None:
    configure_logging("debug", json=True, stream=stream)

    try:
        raise ValueError("bad quantity")
    except ValueError:
        logging.getLogger("scheduler.test").exception("parse failed")

    [line] = lines(stream)
    entry = orjson.loads(line)
    assert entry["level"] == "ERROR"
    assert entry["exc"].startswith("Traceback")
    assert "ValueError: bad quantity" in entry["exc"]


@pytest.mark.parametrize(
    ("extra", "suffix"),
    [
        pytest.param({}, "", id="no extras"),
        pytest.param({"pod": "ns/web-0", "n": 2}, " pod=ns/web-0 n=2", id="logfmt fields"),
        pytest.param({"why": "no fit"}, ' why="no fit"', id="spaces quoted"),
        pytest.param({"empty": ""}, ' empty=""', id="empty quoted"),
        pytest.param({"nodes": ["a"]}, ' nodes="[\\"a\\"]"', id="structured value"),
    ],
)
def test_text_line(stream: io.StringIO, extra: dict[str, Any], suffix: str) -> None:
    configure_logging("INFO", json=False, stream=stream)

    logging.getLogger("scheduler.queue").warning("moved %d pods", 4, extra=extra)

    [line] = lines(stream)
    assert re.fullmatch(f"{TS} WARNING scheduler.queue: moved 4 pods{re.escape(suffix)}", line)


def test_level_filters(stream: io.StringIO) -> None:
    configure_logging("warning", json=True, stream=stream)
    log = logging.getLogger("scheduler.test")

    log.info("hidden")
    log.warning("shown")

    assert [orjson.loads(line)["msg"] for line in lines(stream)] == ["shown"]


def test_idempotent_and_leaves_other_handlers(stream: io.StringIO) -> None:
    other = logging.StreamHandler(io.StringIO())
    logging.getLogger().addHandler(other)
    first = io.StringIO()

    configure_logging("info", json=True, stream=first)
    configure_logging("info", json=False, stream=stream)
    logging.getLogger("scheduler.test").info("once")

    assert first.getvalue() == ""
    assert len(lines(stream)) == 1
    assert "once" in lines(stream)[0]
    assert other in logging.getLogger().handlers


@pytest.mark.parametrize(
    ("text", "level"),
    [
        pytest.param("debug", logging.DEBUG, id="lower case"),
        pytest.param(" ERROR ", logging.ERROR, id="padded upper case"),
    ],
)
def test_parse_level(text: str, level: int) -> None:
    assert parse_level(text) == level


def test_unknown_level_is_rejected(stream: io.StringIO) -> None:
    with pytest.raises(ValueError, match="unknown log level"):
        configure_logging("chatty", json=True, stream=stream)
