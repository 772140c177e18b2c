"""The documents' examples are real: the README's configuration loads and
resolves against the in-tree plugins, and the plugin-writing guide (and the
README's short version of it) is the example package."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scheduler.config import parse_config
from scheduler.engine.assembly import build_registry, resolve

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
WRITING_PLUGINS = ROOT / "docs" / "writing-plugins.md"
EXAMPLE = ROOT / "examples" / "plugin-package"
FENCE = re.compile(r"^(```|~~~)")
HEADING = re.compile(r"^(#{1,6}) ")


def section(path: Path, title: str) -> str:
    """The text under the heading ``title`` of ``path`` up to the next heading
    of the same or a higher level (code blocks' ``#`` lines are not headings)."""
    lines = path.read_text().splitlines(keepends=True)
    fenced = False
    start: int | None = None
    level = 0
    for index, line in enumerate(lines):
        if FENCE.match(line):
            fenced = not fenced
            continue
        heading = None if fenced else HEADING.match(line)
        if heading is None:
            continue
        if start is None:
            if line[heading.end() :].strip() == title:
                start, level = index + 1, len(heading.group(1))
        elif len(heading.group(1)) <= level:
            return "".join(lines[start:index])
    if start is None:
        raise AssertionError(f"{path.name} has no heading {title!r}")
    return "".join(lines[start:])


def blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def test_the_configuration_example_loads_and_resolves() -> None:
    (example,) = blocks(section(README, "Configure"), "yaml")
    config = parse_config(example, source="README.md")
    (profile,) = resolve(config, build_registry())
    assert profile.scheduler_name == "pyscheduler"
    assert config.leader_election.resource_namespace == "pyscheduler"


def test_the_section_helper_stops_at_the_next_heading_of_its_level(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("# T\n## A\na\n```sh\n# not a heading\n```\n### A1\nb\n## B\nc\n")
    assert section(doc, "A") == "a\n```sh\n# not a heading\n```\n### A1\nb\n"
    assert section(doc, "B") == "c\n"
    with pytest.raises(AssertionError, match="no heading 'C'"):
        section(doc, "C")


def test_the_plugin_guide_is_the_example_package() -> None:
    guide = WRITING_PLUGINS.read_text()
    ((toml,), (python,), (yaml_text,)) = (
        blocks(guide, lang) for lang in ("toml", "python", "yaml")
    )
    assert toml in (EXAMPLE / "pyproject.toml").read_text()
    assert python == (EXAMPLE / "src" / "pool_plugins" / "__init__.py").read_text()
    assert yaml_text == (EXAMPLE / "scheduler-config.yaml").read_text()


def test_the_readmes_write_a_plugin_section_quotes_the_example_package() -> None:
    short = section(README, "Write a plugin")
    (toml,) = blocks(short, "toml")
    assert toml in (EXAMPLE / "pyproject.toml").read_text()
    assert "(docs/writing-plugins.md)" in short


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
