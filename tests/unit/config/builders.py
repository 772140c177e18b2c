"""Fluent builders for KubeSchedulerConfiguration documents (plain dicts).

``make_config().set("leaderElection.leaseDuration", "20s").profiles(
make_profile("a").enable(ExtensionPoint.SCORE, "Image:4")).yaml()``; plugin
entries are written ``"Name"`` or ``"Name:weight"``. Every builder returns
fresh objects so cases never share state.
"""

from __future__ import annotations

import copy
from typing import Any, Self

import yaml

from scheduler.config import API_VERSION, KIND, MULTI_POINT_KEY, point_key
from scheduler.framework.interfaces import ExtensionPoint

Obj = dict[str, Any]
MULTI_POINT = MULTI_POINT_KEY


def _key(point: ExtensionPoint | str) -> str:
    return point_key(point) if isinstance(point, ExtensionPoint) else point


def _entry(spec: str) -> Obj:
    name, _, weight = spec.partition(":")
    return {"name": name, "weight": int(weight)} if weight else {"name": name}


class ProfileBuilder:
    def __init__(self, name: str | None) -> None:
        self._obj: Obj = {} if name is None else {"schedulerName": name}

    def set(self, key: str, value: Any) -> Self:
        self._obj[key] = value
        return self

    def enable(self, point: ExtensionPoint | str, *plugins: str) -> Self:
        plugin_set = self._obj.setdefault("plugins", {}).setdefault(_key(point), {})
        plugin_set.setdefault("enabled", []).extend(_entry(spec) for spec in plugins)
        return self

    def disable(self, point: ExtensionPoint | str, *names: str) -> Self:
        plugin_set = self._obj.setdefault("plugins", {}).setdefault(_key(point), {})
        plugin_set.setdefault("disabled", []).extend({"name": name} for name in names)
        return self

    def plugin_config(self, name: str, args: Obj | None) -> Self:
        self._obj.setdefault("pluginConfig", []).append({"name": name, "args": args})
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)


class ConfigBuilder:
    def __init__(self) -> None:
        self._obj: Obj = {"apiVersion": API_VERSION, "kind": KIND}

    def set(self, path: str, value: Any) -> Self:
        """Set a field by its dotted camelCase path: ``clientConnection.qps``."""
        *parents, leaf = path.split(".")
        node = self._obj
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
        return self

    def without(self, key: str) -> Self:
        del self._obj[key]
        return self

    def profiles(self, *profiles: ProfileBuilder) -> Self:
        self._obj.setdefault("profiles", []).extend(profile.obj() for profile in profiles)
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)

    def yaml(self) -> str:
        return yaml.safe_dump(self._obj, sort_keys=False)


def make_config() -> ConfigBuilder:
    return ConfigBuilder()


def make_profile(name: str | None = "p") -> ProfileBuilder:
    return ProfileBuilder(name)
