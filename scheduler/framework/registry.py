"""The plugin registry: plugin name -> how to build it.

Explicit, never filled at import time: the in-tree registry is built by one
function (``plugins.registry.in_tree_registry``) and third-party plugins are
added from the ``pyscheduler.plugins`` entry-point group, each entry point
naming a ``PluginSpec``. Arguments are validated by the spec's pydantic model
before the factory sees them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from scheduler.framework.interfaces import Plugin

if TYPE_CHECKING:
    from scheduler.framework.handle import Handle

ENTRY_POINT_GROUP = "pyscheduler.plugins"


@dataclass(frozen=True)
class PluginSpec:
    """``factory(args, handle)`` builds the plugin; ``args`` is an instance of
    ``args_model`` (defaults filled), or None when the plugin takes none.
    ``plugin_class`` tells, before anything is built, which extension points
    the plugin implements (the configuration is validated against it)."""

    name: str
    plugin_class: type[Plugin]
    factory: Callable[[Any, Handle], Plugin]
    args_model: type[BaseModel] | None = None


class RegistryError(ValueError):
    """Two plugins share a name, or an entry point is not a PluginSpec."""


class Registry(Mapping[str, PluginSpec]):
    def __init__(self, specs: Iterable[PluginSpec] = ()) -> None:
        self._specs: dict[str, PluginSpec] = {}
        for spec in specs:
            self.register(spec)

    def register(self, spec: PluginSpec) -> None:
        if spec.name in self._specs:
            raise RegistryError(f"plugin {spec.name!r} is registered twice")
        self._specs[spec.name] = spec

    def merged(self, other: Iterable[PluginSpec]) -> Registry:
        return Registry([*self._specs.values(), *other])

    def __getitem__(self, name: str) -> PluginSpec:
        return self._specs[name]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)


def entry_point_plugins(group: str = ENTRY_POINT_GROUP) -> list[PluginSpec]:
    """PluginSpecs published by installed distributions under ``group``."""
    specs = []
    for point in entry_points(group=group):
        loaded = point.load()
        spec = loaded() if callable(loaded) and not isinstance(loaded, PluginSpec) else loaded
        if not isinstance(spec, PluginSpec):
            raise RegistryError(
                f"entry point {point.name!r} ({point.value}) in {group} is not a PluginSpec"
            )
        specs.append(spec)
    return specs
