"""Plugin arguments: a ``pluginConfig`` entry checked against the plugin's model.

``args`` may carry upstream's optional type fields (``apiVersion`` of this API
group, ``kind: <Plugin>Args``); the rest is validated by the PluginSpec's
``args_model`` (defaults filled; models are expected to forbid extra fields).
A plugin without an ``args_model`` accepts no arguments and gets None.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from scheduler.config.errors import Loc, Problem, problems_from
from scheduler.config.model import API_VERSION
from scheduler.framework.registry import PluginSpec


def args_kind(plugin_name: str) -> str:
    return f"{plugin_name}Args"


def validate_args(
    spec: PluginSpec, raw: Mapping[str, Any] | None, loc: Loc, problems: list[Problem]
) -> Any:
    """The validated args instance (or None), appending problems found at ``loc``."""
    body = dict(raw or {})
    api_version = body.pop("apiVersion", None)
    kind = body.pop("kind", None)
    if api_version is not None and api_version != API_VERSION:
        problems.append(
            Problem((*loc, "apiVersion"), f"must be {API_VERSION!r}, got {api_version!r}")
        )
    if kind is not None and kind != args_kind(spec.name):
        problems.append(Problem((*loc, "kind"), f"must be {args_kind(spec.name)!r}, got {kind!r}"))
    if spec.args_model is None:
        if body:
            problems.append(
                Problem(loc, f"plugin {spec.name!r} takes no arguments, got {', '.join(body)}")
            )
        return None
    try:
        return spec.args_model.model_validate(body)
    except ValidationError as error:
        problems.extend(problems_from(error, loc))
        return None
