"""A cluster snapshot as a user takes one: ``kubectl get KINDS -A -o yaml``."""

from __future__ import annotations

import subprocess
from pathlib import Path


def kubectl_snapshot(
    binary: Path, kubeconfig: Path, path: Path, kinds: str = "nodes,pods,priorityclasses"
) -> Path:
    """Write the snapshot to ``path`` (synchronous: call it in a thread from async code)."""
    argv = [str(binary), "kubectl", f"--kubeconfig={kubeconfig}", "get", kinds, "-A", "-o", "yaml"]
    result = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
    if result.returncode != 0:
        raise RuntimeError(f"kubectl get {kinds} failed: {result.stderr}")
    path.write_text(result.stdout)
    return path
