"""The configuration in force as one document, the way kube-scheduler's
``--write-config-to`` writes it: the file, the flags and every default, each
profile's multiPoint set merged with the default plugins and a ``pluginConfig``
entry, with defaulted args, for every enabled plugin that takes args.

Upstream's spelling: camelCase keys sorted at every level (sigs.k8s.io/yaml
sorts them), Go durations (``10m0s``), in-tree plugin args with their
``apiVersion``/``kind``. Pure: built from the validated configuration and the
resolved profiles; nothing is connected.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml
from pydantic import BaseModel

from scheduler.config.model import API_VERSION, MULTI_POINT_KEY, SchedulerConfiguration
from scheduler.config.profiles import ResolvedProfile
from scheduler.framework.interfaces import ExtensionPoint

# Args models of in-tree plugins live here; only they carry upstream's
# apiVersion/kind (an out-of-tree plugin's args have no registered kind).
_IN_TREE_PREFIX = "plugins."


def _args_document(name: str, args: Any) -> dict[str, Any]:
    if isinstance(args, BaseModel):
        document = args.model_dump(mode="json", by_alias=True, exclude_none=True)
    else:
        document = dict(args)
    if type(args).__module__.startswith(_IN_TREE_PREFIX):
        document = {"apiVersion": API_VERSION, "kind": f"{name}Args", **document}
    return document


def _profile_document(written: dict[str, Any], resolved: ResolvedProfile) -> dict[str, Any]:
    plugins = dict(written.get("plugins", {}))
    multi = dict(plugins.get(MULTI_POINT_KEY, {}))
    # Upstream's defaults give a weight to Score plugins only (0 elsewhere).
    scoring = set(resolved.names_at(ExtensionPoint.SCORE))
    multi["enabled"] = [
        {"name": name, "weight": weight if name in scoring else 0}
        for name, weight in resolved.multi_point
    ]
    plugins[MULTI_POINT_KEY] = multi
    configured = [entry["name"] for entry in written.get("pluginConfig", [])]
    with_args = {name: args for name, args in resolved.plugin_args.items() if args is not None}
    order = [name for name in configured if name in with_args]
    order += sorted(name for name in with_args if name not in configured)
    return {
        **written,
        "plugins": plugins,
        "pluginConfig": [
            {"name": name, "args": _args_document(name, with_args[name])} for name in order
        ],
    }


def _go_omitempty(value: Any) -> Any:
    """Empty lists dropped and integral floats written as integers, as Go's
    ``omitempty`` slices and float32 fields come out of kube-scheduler."""
    if isinstance(value, dict):
        return {
            key: _go_omitempty(item)
            for key, item in value.items()
            if not (isinstance(item, list) and not item)
        }
    if isinstance(value, list):
        return [_go_omitempty(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def effective_document(
    config: SchedulerConfiguration, profiles: Sequence[ResolvedProfile]
) -> dict[str, Any]:
    document = config.model_dump(mode="json", by_alias=True, exclude_none=True)
    if not document.get("delayCacheUntilActive"):
        document.pop("delayCacheUntilActive", None)  # omitempty bool upstream
    document["profiles"] = [
        _profile_document(written, resolved)
        for written, resolved in zip(document["profiles"], profiles, strict=True)
    ]
    result = _go_omitempty(document)
    assert isinstance(result, dict)
    return result


def effective_yaml(config: SchedulerConfiguration, profiles: Sequence[ResolvedProfile]) -> str:
    return yaml.safe_dump(
        effective_document(config, profiles), sort_keys=True, default_flow_style=False
    )
