"""The README's examples are real: its configuration loads and resolves
against the in-tree plugins."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scheduler.config import parse_config
from scheduler.engine.assembly import build_registry, resolve

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_configuration_example_loads_and_resolves() -> None:
    text = README.read_text()
    section = text[text.index("### Configure") :]
    (example,) = re.findall(
        r"```yaml\n(.*?)```", section[: section.index("### Write a plugin")], re.S
    )
    config = parse_config(example, source="README.md")
    (profile,) = resolve(config, build_registry())
    assert profile.scheduler_name == "pyscheduler"
    assert config.leader_election.resource_namespace == "pyscheduler"


EXAMPLE = README.parent / "examples" / "plugin-package"


def _write_a_plugin() -> str:
    text = README.read_text()
    start = text.index("### Write a plugin")
    return text[start : text.index("\n### ", start + 1)]


def test_the_write_a_plugin_section_is_the_example_package() -> None:
    section = _write_a_plugin()
    ((toml,), (python,), (yaml_text,)) = (
        re.findall(rf"```{lang}\n(.*?)```", section, re.S) for lang in ("toml", "python", "yaml")
    )
    assert toml in (EXAMPLE / "pyproject.toml").read_text()
    assert python == (EXAMPLE / "src" / "pool_plugins" / "__init__.py").read_text()
    assert yaml_text == (EXAMPLE / "scheduler-config.yaml").read_text()


def test_the_example_configuration_resolves_with_the_example_plugins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE / "src"))
    from pool_plugins import POOL_FILTER, PREFER_POOL  # noqa: PLC0415 - the example's src

    config = parse_config((EXAMPLE / "scheduler-config.yaml").read_text(), source="example")
    profiles = resolve(config, build_registry().merged([POOL_FILTER, PREFER_POOL]))
    pools = next(p for p in profiles if p.scheduler_name == "pools")
    assert pools.plugin_args["PoolFilter"].allowed == ("blue", "green")
    assert pools.plugin_args["PreferPool"].preferred == "green"
