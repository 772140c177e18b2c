"""Suite-wide configuration: which tests are ``integration`` and ``benchmark``.

A test is ``integration`` when it runs against a real control plane: it uses
the ``control_plane`` fixture (directly or through ``kube``, ``namespace``,
``nodes``...), or it starts one itself and says so with
``@pytest.mark.integration``. Pure tests that live in ``tests/integration/``
(parsers and checks of the benchmark, argument errors of the CLI) are not, so
the integration counts mean what they say. ``benchmark`` comes from the
``tests/benchmark/`` folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

CONTROL_PLANE_FIXTURE = "control_plane"
_FOLDER_MARKERS = {"benchmark": "benchmark"}
_TESTS = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        relative = Path(item.path).resolve().relative_to(_TESTS.resolve())
        marker = _FOLDER_MARKERS.get(relative.parts[0])
        if marker:
            item.add_marker(getattr(pytest.mark, marker))
        uses_plane = CONTROL_PLANE_FIXTURE in getattr(item, "fixturenames", ())
        if uses_plane and item.get_closest_marker("integration") is None:
            item.add_marker(pytest.mark.integration)
