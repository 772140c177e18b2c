"""Suite-wide configuration: markers come from the folder a test lives in."""

from __future__ import annotations

from pathlib import Path

import pytest

_FOLDER_MARKERS = {"integration": "integration", "benchmark": "benchmark"}
_TESTS = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        relative = Path(item.path).resolve().relative_to(_TESTS.resolve())
        marker = _FOLDER_MARKERS.get(relative.parts[0])
        if marker:
            item.add_marker(getattr(pytest.mark, marker))
