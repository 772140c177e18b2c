"""The pinned Go tools the integration tests run (helm, krew), built by
their ``hack/build-*.sh`` script into ``~/.cache/pyscheduler`` on first use.

A tool that cannot be built fails the test that needs it, with the script's
exit code (its own output goes to stderr as it comes): CI must never pass by
skipping what it was meant to check.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

__all__ = ["built_tool"]


def built_tool(script: Path, timeout_seconds: float) -> Path:
    """Run ``script`` (it prints the built path last on stdout); its path."""
    try:
        built = subprocess.run(
            [str(script)],
            stdout=subprocess.PIPE,  # progress and errors go to stderr, shown as they come
            text=True,
            timeout=timeout_seconds,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        pytest.fail(f"{script.name} could not build its tool: {error}", pytrace=False)
    if built.returncode != 0:
        pytest.fail(
            f"{script.name} failed (exit {built.returncode}; its output is in the captured stderr)",
            pytrace=False,
        )
    return Path(built.stdout.strip().splitlines()[-1])
