"""A probe run in a fresh interpreter: what a start-up imports shows only in
a ``sys.modules`` nothing else has filled (no time is measured)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


def fresh_json(code: str, *args: str) -> dict[str, Any]:
    """Run ``code`` with ``args`` in a new interpreter; its last line of
    output, as JSON."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result
