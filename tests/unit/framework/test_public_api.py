"""The public plugin API is pinned: names and signatures equal public_api.txt.

A failure here means ``scheduler.framework``'s public surface changed. If the
change is deliberate, regenerate the pin (see api_surface.py) and let the
review see the diff; otherwise undo it.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from scheduler import framework
from tests.unit.framework.api_surface import surface

PIN = Path(__file__).with_name("public_api.txt")


def test_the_public_api_equals_its_pin() -> None:
    pinned = PIN.read_text().splitlines()
    current = surface()
    diff = "\n".join(difflib.unified_diff(pinned, current, "public_api.txt", "now", lineterm=""))
    assert current == pinned, f"the public API changed:\n{diff}"


def test_every_public_name_is_importable_and_documented() -> None:

    missing = [name for name in framework.__all__ if not hasattr(framework, name)]
    assert missing == []
    assert len(set(framework.__all__)) == len(framework.__all__)
