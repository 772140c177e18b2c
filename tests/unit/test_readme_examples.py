"""The README's examples are real: its configuration loads and resolves
against the in-tree plugins."""

from __future__ import annotations

import re
from pathlib import Path

from scheduler.app import build_registry, resolve
from scheduler.config import parse_config

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
