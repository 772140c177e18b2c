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
from typing import TYPE_CHECKING, Any, Generic

from typing_extensions import TypeVar

from scheduler.framework.interfaces import Plugin

if TYPE_CHECKING:
    from scheduler.framework.handle import Handle

ENTRY_POINT_GROUP = "pyscheduler.plugins"


# The plugin's arguments: its pydantic model (Any for a spec that takes none).
ArgsT = TypeVar("ArgsT", default=Any)


@dataclass(frozen=True)
class PluginSpec(Generic[ArgsT]):
    """How to build one plugin, typed by its arguments.

    ``factory(args, handle)`` builds the plugin; ``args`` is an instance of
    ``args_model`` validated from the profile's ``pluginConfig`` (defaults
    filled when the plugin is enabled without one), or None when the plugin
    declares no model. ``plugin_class`` tells, before anything is built, which
    extension points the plugin implements (the configuration is validated
    against it). A plugin with arguments is declared

        PluginSpec(name="X", plugin_class=X, factory=X, args_model=XArgs)

    with ``X.__init__(self, args: XArgs, handle: Handle)``: the type checker
    then holds the factory to the model (a ``PluginSpec[XArgs]``).
    """

    name: str
    plugin_class: type[Plugin]
    factory: Callable[[ArgsT, Handle], Plugin]
    args_model: type[ArgsT] | None = None


class RegistryError(ValueError):
    """Two plugins share a name, or an entry point is not a PluginSpec."""


class Registry(Mapping[str, PluginSpec[Any]]):
    """Plugin name -> ``PluginSpec``. A spec may be registered lazily (its
    module imported on first lookup): a plugin no profile enables then costs
    nothing at start-up. Iterating names never loads anything."""

    def __init__(self, specs: Iterable[PluginSpec[Any]] = ()) -> None:
        self._specs: dict[str, PluginSpec[Any] | Callable[[], PluginSpec[Any]]] = {}
        for spec in specs:
            self.register(spec)

    def register(self, spec: PluginSpec[Any]) -> None:
        self._add(spec.name, spec)

    def register_lazy(self, name: str, load: Callable[[], PluginSpec[Any]]) -> None:
        """``load()`` returns the spec named ``name``; called once, on first lookup."""
        self._add(name, load)

    def merged(self, other: Iterable[PluginSpec[Any]]) -> Registry:
        registry = Registry()
        for name, entry in self._specs.items():
            registry._add(name, entry)
        for spec in other:
            registry.register(spec)
        return registry

    def _add(self, name: str, entry: PluginSpec[Any] | Callable[[], PluginSpec[Any]]) -> None:
        if name in self._specs:
            raise RegistryError(f"plugin {name!r} is registered twice")
        self._specs[name] = entry

    def __getitem__(self, name: str) -> PluginSpec[Any]:
        entry = self._specs[name]
        if isinstance(entry, PluginSpec):
            return entry
        spec = entry()
        if not isinstance(spec, PluginSpec) or spec.name != name:
            raise RegistryError(f"the lazy entry for plugin {name!r} loaded {spec!r}")
        self._specs[name] = spec
        return spec

    def __contains__(self, name: object) -> bool:  # Mapping's would load the entry
        return name in self._specs

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)


def entry_point_plugins(group: str = ENTRY_POINT_GROUP) -> list[PluginSpec[Any]]:
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
