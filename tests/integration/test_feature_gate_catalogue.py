"""The generated gate catalogue (``scheduler/framework/gatecatalogue.py``)
agrees with the pinned kube-scheduler itself: every alpha and beta gate that
``kube-scheduler --help`` lists, with the same stage and default, and no
other alpha or beta gate (GA and deprecated gates are not listed there)."""

from __future__ import annotations

import re
import subprocess

from localcluster.binary import control_plane_binary
from scheduler.framework.gatecatalogue import CATALOGUE

_LISTED = re.compile(r"kube:(\w+)=true\|false \((ALPHA|BETA) - default=(true|false)\)")


def test_alpha_and_beta_gates_match_the_built_kube_scheduler_help() -> None:
    done = subprocess.run(
        [str(control_plane_binary()), "kube-scheduler", "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    listed = {
        name: (default == "true", stage) for name, stage, default in _LISTED.findall(done.stdout)
    }
    ours = {
        name: (default, stage)
        for name, (default, stage, _locked) in CATALOGUE.items()
        if stage in {"ALPHA", "BETA"}
    }

    assert len(listed) > 100, done.stdout[-2000:]
    assert ours == listed
