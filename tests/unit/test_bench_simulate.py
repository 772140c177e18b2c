"""``python -m bench.simulate`` at a tiny size: every pod bound, figures reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.simulate import main


def test_tiny_run_binds_every_pod_and_writes_its_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sim.json"
    argv = ["--nodes", "5", "--init-pods", "5", "--pods", "20", "--out", str(out)]
    assert main(argv) == 0
    result = json.loads(out.read_text())
    assert (result["nodes"], result["pods"], result["bound"]) == (5, 20, 20)
    assert result["podsPerSecond"] > 0
    assert result["cpuMillisecondsPerPod"] > 0
    assert "20/20 pods bound" in capsys.readouterr().out
