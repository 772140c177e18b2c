"""The launcher leaves nothing behind: no process, no port, no data directory,
neither after a clean stop nor after the test run itself is killed."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from localcluster import ControlPlane, ControlPlaneOptions
from localcluster.cluster import remove_stale_dirs

pytestmark = pytest.mark.integration  # starts its own control planes


def _gone(pid: int) -> bool:
    """Dead or a zombie waiting for init to reap it."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "State:\tZ" in status


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def test_stopped_control_plane_leaves_no_process_port_or_data() -> None:
    plane = ControlPlane(ControlPlaneOptions(controller_manager=False))
    plane.start()
    pids = [process.pid for process in plane.components.values()]
    ports = [plane.etcd_port, plane.apiserver_port]
    dirs = [plane.layout.base, plane.layout.etcd_data]
    assert set(plane.startup_seconds) == {"etcd", "kube-apiserver"}
    plane.stop()
    assert all(pid is not None and _gone(pid) for pid in pids)
    assert all(_port_free(port) for port in ports)
    assert not any(path.exists() for path in dirs)


_CHILD = """
import json, sys, time
from localcluster import ControlPlane, ControlPlaneOptions
from localcluster.cluster import remove_stale_dirs
plane = ControlPlane(ControlPlaneOptions(controller_manager=False))
plane.start()
pids = [p.pid for p in plane.components.values()]
dirs = [str(plane.layout.base), str(plane.layout.etcd_data)]
print(json.dumps({"pids": pids, "dirs": dirs}), flush=True)
time.sleep(600)
"""


def test_killed_test_run_takes_its_control_plane_with_it() -> None:
    with subprocess.Popen(
        [sys.executable, "-c", _CHILD],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    ) as child:
        try:
            assert child.stdout is not None
            started = json.loads(child.stdout.readline())
            pids, dirs = started["pids"], [Path(d) for d in started["dirs"]]
            assert len(pids) == 2
            assert not any(_gone(pid) for pid in pids)
        finally:
            child.send_signal(signal.SIGKILL)

    deadline = time.monotonic() + 15
    while not all(_gone(pid) for pid in pids):
        assert time.monotonic() < deadline, "components did not die with their parent"
        time.sleep(0.05)
    assert set(dirs) <= set(remove_stale_dirs()), "the next start removes what the killed run left"
    assert not any(path.exists() for path in dirs)
