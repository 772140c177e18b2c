"""Locate, or build once, the multi-call control-plane binary ``kcp``.

The binary holds etcd, kube-apiserver, kube-controller-manager, kube-scheduler
and kubectl built from the pinned Go module in ``hack/controlplane``. Building
is delegated to ``hack/build-controlplane.sh``, which caches the result outside
the clone keyed by a hash of the Go sources; this module only asks it for the
path. ``KCP_BINARY`` overrides the lookup with an explicit path.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
BUILD_SCRIPT = REPO_ROOT / "hack" / "build-controlplane.sh"
BINARY_ENV = "KCP_BINARY"


class BinaryError(RuntimeError):
    """The control-plane binary could not be found or built."""


def control_plane_binary() -> Path:
    """Return the path of the ``kcp`` binary, building it if it is missing.

    A cold build takes many minutes; its progress goes to this process's
    stderr so that a waiting developer or CI log sees it.
    """
    explicit = os.environ.get(BINARY_ENV)
    if explicit:
        path = Path(explicit)
        if not os.access(path, os.X_OK):
            raise BinaryError(f"{BINARY_ENV}={explicit} is not an executable file")
        return path
    result = subprocess.run(
        [str(BUILD_SCRIPT)],
        stdout=subprocess.PIPE,
        stderr=sys.stderr,
        text=True,
        check=False,
    )
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        raise BinaryError(f"{BUILD_SCRIPT} failed with exit code {result.returncode}")
    path = Path(lines[-1])
    if not os.access(path, os.X_OK):
        raise BinaryError(f"{BUILD_SCRIPT} printed {path}, which is not an executable file")
    return path
