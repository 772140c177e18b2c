"""A plugin registered lazily is imported only when a profile names it: the
default profile's start never loads AutoscaleEnforcer (a fresh interpreter's
``sys.modules`` tells; no time measured), a profile that enables it still
resolves, and a lazy entry that loads the wrong spec is refused by name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from scheduler.framework import Plugin, PluginSpec, Registry, RegistryError
from tests.support.interpreter import fresh_json


class Late(Plugin):
    name = "Late"


def _spec(name: str) -> PluginSpec[Any]:
    return PluginSpec(name=name, plugin_class=Late, factory=lambda _args, _handle: Late())


_PROBE = """
import json, sys
from scheduler.config import load_config
from scheduler.engine.assembly import build_registry, resolve
profiles = resolve(load_config(sys.argv[1] if len(sys.argv) > 1 else None), build_registry())
print(json.dumps({"loaded": "plugins.autoscale_enforcer" in sys.modules,
                  "profiles": [p.scheduler_name for p in profiles]}))
"""

_WITH_ENFORCER = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: autoscale-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: AutoscaleEnforcer
"""


def _probe(*args: str) -> dict[str, Any]:
    return fresh_json(_PROBE, *args)


@dataclass(frozen=True)
class Case:
    name: str
    config: str | None
    loaded: bool


@pytest.mark.parametrize(
    "case",
    [
        Case("the default profile", None, False),
        Case("a profile enabling AutoscaleEnforcer", _WITH_ENFORCER, True),
    ],
    ids=lambda c: c.name,
)
def test_autoscale_enforcer_is_imported_only_when_a_profile_names_it(
    case: Case, tmp_path: Any
) -> None:
    args: list[str] = []
    if case.config is not None:
        path = tmp_path / "config.yaml"
        path.write_text(case.config)
        args.append(str(path))
    assert _probe(*args)["loaded"] is case.loaded


def test_a_lazy_entry_loads_once_on_lookup_and_iterating_loads_nothing() -> None:
    calls: list[str] = []
    spec = _spec("Late")

    def load() -> PluginSpec[Any]:
        calls.append("load")
        return spec

    registry = Registry()
    registry.register_lazy("Late", load)
    assert list(registry) == ["Late"]
    assert "Late" in registry
    assert calls == [], "neither iterating nor a membership test loads it"
    assert registry["Late"] is spec
    assert registry["Late"] is spec
    assert calls == ["load"]
    assert registry.merged([_spec("Other")])["Late"] is spec


def test_a_lazy_entry_that_loads_another_plugin_is_refused_by_name() -> None:
    registry = Registry()
    registry.register_lazy("Late", lambda: _spec("Other"))
    with pytest.raises(RegistryError, match="'Late'"):
        registry["Late"]


def test_a_lazy_name_registered_twice_is_refused() -> None:
    registry = Registry()
    registry.register_lazy("Late", lambda: pytest.fail("not loaded"))
    with pytest.raises(RegistryError, match="twice"):
        registry.register_lazy("Late", lambda: pytest.fail("not loaded"))
