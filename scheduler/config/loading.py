"""Reading a KubeSchedulerConfiguration file: YAML in, validated model out.

Decoding is strict as upstream's: duplicate keys, unknown fields and a missing
or foreign apiVersion/kind are errors. YAML syntax errors name the line and
column; validation errors name the field path. No I/O but reading the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from scheduler.config.errors import ConfigError, Problem, problems_from
from scheduler.config.model import API_VERSION, KIND, SchedulerConfiguration

_TYPE_FIELDS = (("apiVersion", API_VERSION), ("kind", KIND))


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key repeated in one mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
            except TypeError:  # unhashable: the base class reports it
                continue
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r}",
                    key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _yaml_problem(error: yaml.YAMLError, source: str) -> str:
    mark = getattr(error, "problem_mark", None)
    where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source
    context = getattr(error, "context", None)
    problem = getattr(error, "problem", None) or str(error)
    detail = f"{context}: {problem}" if context else problem
    return f"{where}: invalid YAML: {detail}"


def parse_config(text: str, source: str = "<config>") -> SchedulerConfiguration:
    """Decode and validate one YAML document; ``source`` names it in errors."""
    try:
        data = yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as error:
        raise ConfigError(_yaml_problem(error, source)) from None
    if not isinstance(data, dict):
        found = "an empty document" if data is None else f"a {type(data).__name__}"
        raise ConfigError(
            f"expected a mapping with apiVersion: {API_VERSION} and kind: {KIND}, got {found}",
            source,
        )
    problems = [Problem((key,), "required field") for key, _ in _TYPE_FIELDS if key not in data]
    try:
        config = SchedulerConfiguration.model_validate(data)
    except ValidationError as error:
        problems.extend(problems_from(error))
    if problems:
        raise ConfigError(problems, source)
    return config


def load_config(path: str | Path | None) -> SchedulerConfiguration:
    """The configuration in the file at ``path``; all defaults when None."""
    if path is None:
        return SchedulerConfiguration()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot read the configuration: {error.strerror}", str(path)) from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"cannot read the configuration: {error}", str(path)) from None
    return parse_config(text, source=str(path))
