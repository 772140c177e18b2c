"""The informers reach the API only through the client protocol: importing them
must not load kubernetes_asyncio or aiohttp (checked in a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import sys
import {module}
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("kubernetes_asyncio", "aiohttp"))
print(",".join(loaded))
"""


@pytest.mark.parametrize(
    "module",
    [
        pytest.param("scheduler.informers", id="informers"),
        pytest.param("scheduler.kube.resources", id="kube resources"),
        pytest.param("scheduler.kube.errors", id="kube errors"),
        pytest.param("scheduler.kube.events", id="kube events"),
    ],
)
def test_module_does_not_load_the_http_client(module: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert result.stdout.strip() == ""
