"""From configured profiles to the plugin list of every extension point.

Follows upstream (``mergePluginSet`` in the v1 defaults, then the framework's
``expandMultiPointPlugins``):

1. The default multiPoint set merged with the profile's multiPoint: defaults
   minus disabled (``*`` disables them all); a user entry naming a default
   replaces it in place (with the user's weight); other user entries follow.
2. Each multiPoint plugin is expanded to every extension point it implements,
   unless disabled there (``*`` there stops the expansion). Plugins enabled at
   a point explicitly keep their place; at that point the order is: explicit
   plugins that are also in multiPoint, then multiPoint plugins, then the
   other explicit plugins.
3. Score weights: an explicit Score entry wins over the multiPoint entry;
   unset or 0 means 1.

Every problem is collected with the path of the entry that caused it; the
result exists only when there is none. Pure: no plugin is constructed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from scheduler.config.errors import ConfigError, Loc, Problem, keyed
from scheduler.config.model import (
    ALL_PLUGINS,
    CONFIGURABLE_POINTS,
    MULTI_POINT_KEY,
    PluginSet,
    Profile,
    SchedulerConfiguration,
    point_key,
)
from scheduler.config.plugin_args import validate_args
from scheduler.framework.interfaces import EXTENSION_POINT_CLASSES, ExtensionPoint, Plugin
from scheduler.framework.registry import Registry

PointsOf = Callable[[str], frozenset[ExtensionPoint]]


@dataclass(frozen=True)
class PluginRef:
    """A plugin at an extension point; ``weight`` matters only at Score."""

    name: str
    weight: int = 1

    def __post_init__(self) -> None:
        if self.weight < 0:
            raise ValueError(f"plugin {self.name!r}: weight must be >= 0, got {self.weight}")
        if self.weight == 0:
            object.__setattr__(self, "weight", 1)


@dataclass(frozen=True)
class ResolvedProfile:
    scheduler_name: str
    percentage_of_nodes_to_score: int | None
    # Every configurable extension point, in lifecycle order; empty when unused.
    plugins: Mapping[ExtensionPoint, tuple[PluginRef, ...]]
    # Every enabled plugin -> its validated args model instance, or None.
    plugin_args: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    # The multiPoint set after merging with the defaults, as upstream's
    # defaulting writes it back: (name, weight as given; 0 = unset).
    multi_point: tuple[tuple[str, int], ...] = ()

    def names_at(self, point: ExtensionPoint) -> tuple[str, ...]:
        return tuple(ref.name for ref in self.plugins[point])


def extension_points_of_class(cls: type[Plugin]) -> frozenset[ExtensionPoint]:
    """The configurable extension points a plugin class implements."""
    return frozenset(
        point for point, base in EXTENSION_POINT_CLASSES.items() if issubclass(cls, base)
    )


def points_of_classes(classes: Iterable[type[Plugin]]) -> PointsOf:
    """A ``points_of`` for ``resolve_profiles`` from plugin classes (by ``name``)."""
    table = {cls.name: extension_points_of_class(cls) for cls in classes}
    return lambda name: table.get(name, frozenset())


@dataclass(frozen=True)
class _Entry:
    """An enabled plugin with the raw weight (0 = unset) and where it came from."""

    name: str
    weight: int
    loc: Loc
    default: bool = False


def _merge_plugin_set(
    defaults: Sequence[_Entry], enabled: Sequence[_Entry], disabled: Iterable[str]
) -> list[_Entry]:
    """Upstream ``mergePluginSet`` over the enabled lists."""
    disabled_names = set(disabled)
    custom = {entry.name: entry for entry in enabled}
    replaced: set[str] = set()
    merged: list[_Entry] = []
    if ALL_PLUGINS not in disabled_names:
        for default in defaults:
            if default.name in disabled_names:
                continue
            if default.name in custom:
                merged.append(custom[default.name])
                replaced.add(default.name)
            else:
                merged.append(default)
    merged.extend(entry for entry in enabled if entry.name not in replaced)
    return merged


def _entries(plugin_set: PluginSet, loc: Loc) -> list[_Entry]:
    return [
        _Entry(entry.name, entry.weight or 0, (*loc, "enabled", index))
        for index, entry in enumerate(plugin_set.enabled)
    ]


def _disabled(plugin_set: PluginSet) -> set[str]:
    return {entry.name for entry in plugin_set.disabled}


class _ProfileResolver:
    def __init__(
        self,
        index: int,
        profile: Profile,
        registry: Registry,
        default_plugins: Sequence[PluginRef],
        points_of: PointsOf,
    ) -> None:
        self.loc: Loc = ("profiles", index)
        self.profile = profile
        self.registry = registry
        self.points_of = points_of
        self.problems: list[Problem] = []
        plugins_loc = (*self.loc, "plugins")
        multi_loc = (*plugins_loc, MULTI_POINT_KEY)
        defaults = [
            _Entry(ref.name, ref.weight, (*multi_loc, "defaults"), default=True)
            for ref in default_plugins
        ]
        multi = profile.plugins.multi_point
        self.multi_point = _merge_plugin_set(defaults, _entries(multi, multi_loc), _disabled(multi))
        self.explicit = {
            point: _entries(profile.plugins.at(point), (*plugins_loc, point_key(point)))
            for point in CONFIGURABLE_POINTS
        }

    def resolve(self) -> ResolvedProfile | None:
        self._check_entries(self.multi_point, None)
        for point, entries in self.explicit.items():
            self._check_entries(entries, point)
        if self.problems:
            return None
        plugins = {point: self._expand(point) for point in CONFIGURABLE_POINTS}
        self._check_required_points(plugins)
        plugin_args = self._plugin_args()
        if self.problems:
            return None
        name = self.profile.scheduler_name
        assert name, "SchedulerConfiguration guarantees a name"
        return ResolvedProfile(
            scheduler_name=name,
            percentage_of_nodes_to_score=self.profile.percentage_of_nodes_to_score,
            plugins=MappingProxyType(plugins),
            plugin_args=MappingProxyType(plugin_args),
            multi_point=tuple((entry.name, entry.weight) for entry in self.multi_point),
        )

    def _check_entries(self, entries: Sequence[_Entry], point: ExtensionPoint | None) -> None:
        seen: set[str] = set()
        where = f"at {point.value}" if point else "in multiPoint"
        for entry in entries:
            if entry.name not in self.registry:
                unknown = "unknown default plugin" if entry.default else "unknown plugin"
                self.problems.append(Problem(entry.loc, f"{unknown} {entry.name!r}"))
            elif entry.name in seen:
                self.problems.append(
                    Problem(entry.loc, f"plugin {entry.name!r} is enabled twice {where}")
                )
            elif point is not None and point not in self.points_of(entry.name):
                self.problems.append(
                    Problem(entry.loc, f"plugin {entry.name!r} does not implement {point.value}")
                )
            seen.add(entry.name)

    def _expand(self, point: ExtensionPoint) -> tuple[PluginRef, ...]:
        explicit = [entry.name for entry in self.explicit[point]]
        disabled = _disabled(self.profile.plugins.at(point))
        overridden: set[str] = set()
        expanded: list[str] = []
        if ALL_PLUGINS not in disabled:
            for entry in self.multi_point:
                if point not in self.points_of(entry.name) or entry.name in disabled:
                    continue
                if entry.name in explicit:
                    overridden.add(entry.name)
                else:
                    expanded.append(entry.name)
        names = [
            *(name for name in explicit if name in overridden),
            *expanded,
            *(name for name in explicit if name not in overridden),
        ]
        if point is not ExtensionPoint.SCORE:
            return tuple(PluginRef(name) for name in names)
        weights: dict[str, int] = {}
        for entry in [*self.explicit[point], *self.multi_point]:
            weights.setdefault(entry.name, entry.weight)
        return tuple(PluginRef(name, weights[name]) for name in names)

    def _check_required_points(self, plugins: Mapping[ExtensionPoint, Sequence[PluginRef]]) -> None:
        plugins_loc = (*self.loc, "plugins")
        queue_sort = [ref.name for ref in plugins[ExtensionPoint.QUEUE_SORT]]
        if len(queue_sort) != 1:
            self.problems.append(
                Problem(
                    (*plugins_loc, point_key(ExtensionPoint.QUEUE_SORT)),
                    f"exactly one QueueSort plugin must be enabled, got {len(queue_sort)}"
                    + (f" ({', '.join(queue_sort)})" if queue_sort else ""),
                )
            )
        if not plugins[ExtensionPoint.BIND]:
            self.problems.append(
                Problem(
                    (*plugins_loc, point_key(ExtensionPoint.BIND)),
                    "at least one Bind plugin must be enabled",
                )
            )

    def _plugin_args(self) -> dict[str, Any]:
        configured: dict[str, Any] = {}
        first_index: dict[str, int] = {}
        for index, config in enumerate(self.profile.plugin_config):
            loc = (*self.loc, "pluginConfig", index, "name")
            if config.name in first_index:
                self.problems.append(
                    Problem(
                        loc,
                        f"duplicate config for plugin {config.name!r} "
                        f"(first at pluginConfig[{first_index[config.name]}])",
                    )
                )
                continue
            first_index[config.name] = index
            if config.name not in self.registry:
                self.problems.append(Problem(loc, f"unknown plugin {config.name!r}"))
                continue
            args_loc = (*self.loc, keyed("pluginConfig", config.name), "args")
            configured[config.name] = validate_args(
                self.registry[config.name], config.args, args_loc, self.problems
            )
        result: dict[str, Any] = {}
        for name in self._enabled_names():
            if name in configured:
                result[name] = configured[name]
            else:
                args_loc = (*self.loc, keyed("pluginConfig", name), "args")
                result[name] = validate_args(self.registry[name], None, args_loc, self.problems)
        return result

    def _enabled_names(self) -> list[str]:
        names = dict.fromkeys(entry.name for entry in self.multi_point)
        for entries in self.explicit.values():
            names.update(dict.fromkeys(entry.name for entry in entries))
        return list(names)


def _check_common_queue_sort(profiles: Sequence[ResolvedProfile]) -> list[Problem]:
    """One queue serves every profile, so they must agree on how it sorts."""
    problems: list[Problem] = []
    first = profiles[0]
    (canon,) = first.names_at(ExtensionPoint.QUEUE_SORT)
    for index, profile in enumerate(profiles[1:], start=1):
        (name,) = profile.names_at(ExtensionPoint.QUEUE_SORT)
        if name != canon:
            problems.append(
                Problem(
                    ("profiles", index, "plugins", point_key(ExtensionPoint.QUEUE_SORT)),
                    f"must be the same for all profiles: {name!r} here, {canon!r} in profiles[0]",
                )
            )
        elif profile.plugin_args.get(name) != first.plugin_args.get(canon):
            problems.append(
                Problem(
                    ("profiles", index, keyed("pluginConfig", name), "args"),
                    "QueueSort plugin args must be the same for all profiles "
                    "(they differ from profiles[0])",
                )
            )
    return problems


def resolve_profiles(
    config: SchedulerConfiguration,
    registry: Registry,
    default_plugins: Sequence[PluginRef],
    points_of: PointsOf,
) -> list[ResolvedProfile]:
    """The plugins and validated args of every profile, in configuration order.

    ``default_plugins`` is the default multiPoint set, in order; ``points_of``
    names the extension points each registered plugin implements. Raises
    ConfigError listing every problem found.
    """
    problems: list[Problem] = []
    resolved: list[ResolvedProfile] = []
    for index, profile in enumerate(config.profiles):
        resolver = _ProfileResolver(index, profile, registry, default_plugins, points_of)
        result = resolver.resolve()
        problems.extend(resolver.problems)
        if result is not None:
            resolved.append(result)
    if not problems:
        problems.extend(_check_common_queue_sort(resolved))
    if problems:
        raise ConfigError(problems)
    return resolved
