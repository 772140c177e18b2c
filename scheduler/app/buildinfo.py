"""What this build is: the distribution's version and, when it is known, the
git revision it was made from (``pyscheduler --version``).

The version comes from the installed distribution's metadata
(``kube-pyscheduler``), so a wheel and an editable install report the same
thing. The revision is known only when the package is imported from a git
checkout of the project (``<root>/scheduler`` beside ``<root>/.git``); an
installed wheel has none, even from a virtual environment inside a checkout.
Nothing here raises: a missing git or an odd checkout gives no revision.
"""

from __future__ import annotations

import platform
import subprocess
import sys
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as distribution_version
from pathlib import Path

DISTRIBUTION = "kube-pyscheduler"
UNKNOWN_VERSION = "0+unknown"
_GIT_TIMEOUT_SECONDS = 2.0


def version() -> str:
    try:
        return distribution_version(DISTRIBUTION)
    except PackageNotFoundError:
        return UNKNOWN_VERSION


def revision(package_dir: Path | None = None) -> str | None:
    """The short commit of the checkout this package is imported from, or None."""
    root = (package_dir or Path(__file__).resolve().parent).parent
    if not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and commit else None


def version_line() -> str:
    known = revision()
    return f"pyscheduler {version()}" + (f" (revision {known})" if known else "")


_GO_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le"}


def build_info_labels() -> dict[str, str]:
    """``kubernetes_build_info``'s labels for this build. ``git_version``,
    ``major`` and ``minor`` are pyscheduler's own version (not the Kubernetes
    release it follows, v1.36); ``go_version`` carries the Python version and
    ``compiler`` the interpreter, since there is no Go toolchain."""
    ours = version()
    major, _, rest = ours.partition(".")
    minor = rest.partition(".")[0]
    machine = platform.machine()
    return {
        "build_date": "",
        "compiler": platform.python_implementation().lower(),
        "git_commit": revision() or "",
        "git_tree_state": "",
        "git_version": f"v{ours}",
        "go_version": f"python{platform.python_version()}",
        "major": major,
        "minor": minor,
        "platform": f"{sys.platform}/{_GO_ARCH.get(machine, machine)}",
    }
