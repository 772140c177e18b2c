"""Configuration errors that say where the problem is.

Every problem reads ``<path>: <what is wrong>``, the path written the way a
reader finds it in the YAML (``profiles[0].plugins.score.enabled[1].weight``);
plugin configs are keyed by plugin name (``pluginConfig[NodeResourcesFit]``).
A ``ConfigError`` carries all problems found, not only the first.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

Loc = tuple[str | int, ...]


def format_path(loc: Iterable[str | int]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text


def keyed(field: str, key: str) -> str:
    """A path part for a list entry found by its name: ``pluginConfig[Name]``."""
    return f"{field}[{key}]"


@dataclass(frozen=True)
class Problem:
    loc: Loc
    message: str

    def __str__(self) -> str:
        return f"{format_path(self.loc)}: {self.message}" if self.loc else self.message


class ConfigError(ValueError):
    """The configuration is invalid; ``problems`` lists every problem found."""

    def __init__(self, problems: str | Sequence[Problem | str], source: str | None = None) -> None:
        items = [problems] if isinstance(problems, str) else list(problems)
        self.problems: tuple[str, ...] = tuple(str(item) for item in items)
        self.source = source
        head = f"{source}: " if source else ""
        if len(self.problems) == 1:
            text = head + self.problems[0]
        else:
            listed = "".join(f"\n  {problem}" for problem in self.problems)
            text = f"{head}{len(self.problems)} problems in the configuration:{listed}"
        super().__init__(text)


class FieldProblems(ValueError):
    """Raised inside a pydantic validator to report problems at paths below the
    validated object (pydantic itself would only name the object)."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(str(problem) for problem in problems))


_KIND_NAMES = {
    "int_type": "an integer",
    "int_from_float": "an integer",
    "int_parsing": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "string_type": "a string",
    "bool_type": "a boolean",
    "bool_parsing": "a boolean",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "list_type": "a list",
    "tuple_type": "a list",
}

_BOUNDS = {
    "greater_than": ("gt", ">"),
    "greater_than_equal": ("ge", ">="),
    "less_than": ("lt", "<"),
    "less_than_equal": ("le", "<="),
}


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return f"{type(value).__name__} {value!r}"


def _message(error: Any) -> str:
    kind: str = error["type"]
    ctx: dict[str, Any] = error.get("ctx") or {}
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "missing":
        return "required field"
    if kind in _KIND_NAMES:
        return f"must be {_KIND_NAMES[kind]}, got {_type_name(error.get('input'))}"
    if kind in _BOUNDS:
        key, symbol = _BOUNDS[kind]
        return f"must be {symbol} {ctx.get(key)}"
    if kind in {"value_error", "assertion_error"} and "error" in ctx:
        return str(ctx["error"])
    return str(error["msg"])


def problems_from(error: ValidationError, prefix: Loc = ()) -> Iterator[Problem]:
    """Translate pydantic's errors into problems, their paths under ``prefix``."""
    for item in error.errors(include_url=False):
        loc: Loc = prefix + tuple(item["loc"])
        cause = (item.get("ctx") or {}).get("error")
        if isinstance(cause, FieldProblems):
            for problem in cause.problems:
                yield Problem(loc + problem.loc, problem.message)
        else:
            yield Problem(loc, _message(item))
