"""CycleState: per-attempt typed storage shared by the plugins of one
scheduling attempt (scheduling cycle and its binding cycle).

Keys are typed: ``KEY: StateKey[MyState] = StateKey("MyPlugin/state")`` and
``state.read(KEY)`` returns a ``MyState``. Values implement ``clone()`` so
that the framework can fork the state for what-if evaluations (nominated
pods, preemption) without plugins seeing each other's changes.
"""

from __future__ import annotations

from typing import Any, Generic, Protocol, Self, TypeVar


class StateData(Protocol):
    def clone(self) -> Self: ...


T = TypeVar("T", bound=StateData)


class StateKey(Generic[T]):
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"StateKey({self.name!r})"


class StateNotFound(KeyError):
    """``read`` of a key that no plugin wrote in this cycle."""


class CycleState:
    __slots__ = (
        "_data",
        "pods_to_activate",
        "record_plugin_metrics",
        "skip_filter_plugins",
        "skip_pre_bind_plugins",
        "skip_score_plugins",
    )

    def __init__(self, *, record_plugin_metrics: bool = False) -> None:
        self._data: dict[str, Any] = {}
        self.record_plugin_metrics = record_plugin_metrics
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        self.skip_pre_bind_plugins: set[str] = set()
        # pod key -> raw pod: pods a plugin asks to move to activeQ at the end
        # of a successful scheduling or binding cycle.
        self.pods_to_activate: dict[str, Any] = {}

    # No typing.cast here: these run per node per plugin, and cast is a call.
    def read(self, key: StateKey[T]) -> T:
        try:
            return self._data[key.name]  # type: ignore[no-any-return]
        except KeyError:
            raise StateNotFound(f"{key.name!r} not found in cycle state") from None

    def get(self, key: StateKey[T]) -> T | None:
        return self._data.get(key.name)

    def write(self, key: StateKey[T], value: T) -> None:
        self._data[key.name] = value

    def delete(self, key: StateKey[Any]) -> None:
        self._data.pop(key.name, None)

    def clone(self) -> CycleState:
        copy = CycleState(record_plugin_metrics=self.record_plugin_metrics)
        copy._data = {name: value.clone() for name, value in self._data.items()}
        copy.skip_filter_plugins = set(self.skip_filter_plugins)
        copy.skip_score_plugins = set(self.skip_score_plugins)
        copy.skip_pre_bind_plugins = set(self.skip_pre_bind_plugins)
        copy.pods_to_activate = self.pods_to_activate
        return copy
