"""Test and tooling side: a real local control plane built from pinned upstream
Go modules, started on loopback for tests, the demo and the benchmark.

Never imported by ``scheduler`` or ``plugins`` (an import-linter contract).
"""

from localcluster.binary import BinaryError, control_plane_binary
from localcluster.cluster import (
    ControlPlane,
    ControlPlaneError,
    ControlPlaneOptions,
    running_control_plane,
)

__all__ = [
    "BinaryError",
    "ControlPlane",
    "ControlPlaneError",
    "ControlPlaneOptions",
    "control_plane_binary",
    "running_control_plane",
]
