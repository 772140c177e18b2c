"""The schedulers under test, run the same way: each its own process,
serving /readyz and /metrics on loopback.

- ``ours``: ``pyscheduler --config F --kubeconfig K --secure-port P --bind-address
  127.0.0.1 --v=0``, its default profile ``pyscheduler``, HTTPS with ``/metrics``
  always allowed;
- ``upstream``: ``kcp kube-scheduler --config F`` from the same control-plane
  build (``ControlPlane.start_scheduler``) with exactly our plugins, weights
  and args (``bench.profiles``), profile ``upstream-same``: the headline row;
- ``upstream-default``: the same binary with its full default profile
  ``default-scheduler``, for reference;
- ``ceiling``: ``python -m bench.ceiling``, the bare round-robin binder
  through our client stack (``bench.ceiling``), name ``bench-ceiling``;
- ``ceiling-events``: the same binder with ``--events``, which also writes the
  "Scheduled" event per bound pod that both schedulers write, name
  ``bench-ceiling-events``.

Upstream's ``--secure-port=0`` is overridden by a later ``--secure-port=P``
with ``/metrics`` added to the always-allowed paths, so it serves the same
endpoints as ours (HTTPS, self-signed, anonymous).

Identical conditions: client QPS and burst 5000 (as scheduler_perf), leader
election off, warnings-only logging. "Ready" means the process's own
``/readyz`` answers 200 (for all: informers synced).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from bench.profiles import our_default_profile, same_plugins_profile
from localcluster import ControlPlane
from localcluster.cluster import free_port
from localcluster.process import ComponentProcess

CLIENT_QPS = 5000
LOOPBACK = "127.0.0.1"
HTTP_TIMEOUT = aiohttp.ClientTimeout(total=10)
_UPSTREAM_ALLOWED_PATHS = "/healthz,/readyz,/livez,/metrics,/debug/pprof/*"
BENCH_FLAGS_ENV = "PYSCHEDULER_BENCH_FLAGS"


class SchedulerKind(StrEnum):
    OURS = "ours"
    UPSTREAM = "upstream"
    UPSTREAM_DEFAULT = "upstream-default"
    CEILING = "ceiling"
    CEILING_EVENTS = "ceiling-events"


PROFILE_NAMES = {
    SchedulerKind.OURS: "pyscheduler",
    SchedulerKind.UPSTREAM: "upstream-same",
    SchedulerKind.UPSTREAM_DEFAULT: "default-scheduler",
    SchedulerKind.CEILING: "bench-ceiling",
    SchedulerKind.CEILING_EVENTS: "bench-ceiling-events",
}
CEILING_KINDS = frozenset({SchedulerKind.CEILING, SchedulerKind.CEILING_EVENTS})
UPSTREAM_KINDS = frozenset({SchedulerKind.UPSTREAM, SchedulerKind.UPSTREAM_DEFAULT})


class SchedulerError(RuntimeError):
    """A scheduler exited or did not become ready; the message holds its log."""


def profile_document(kind: SchedulerKind) -> dict[str, Any]:
    """The one profile ``kind`` runs (ours and upstream-default: the default one)."""
    name = PROFILE_NAMES[kind]
    if kind is SchedulerKind.UPSTREAM:
        return same_plugins_profile(
            our_default_profile(PROFILE_NAMES[SchedulerKind.OURS]), name
        ).profile
    return {"schedulerName": name}


def config_document(kind: SchedulerKind, kubeconfig: Path, qps: int = CLIENT_QPS) -> str:
    config: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": qps, "burst": qps},
        "leaderElection": {"leaderElect": False},
        "profiles": [profile_document(kind)],
    }
    return yaml.safe_dump(config, sort_keys=False)


@dataclass
class RunningScheduler:
    kind: SchedulerKind
    process: ComponentProcess
    base_url: str

    @property
    def profile(self) -> str:
        return PROFILE_NAMES[self.kind]

    def alive_pid(self) -> int:
        """The process id; raises ``SchedulerError`` with its log if it has exited."""
        pid = self.process.pid
        if pid is None or not self.process.running():
            raise SchedulerError(f"{self.kind} scheduler is not running:\n{self.process.tail()}")
        return pid


def extra_flags() -> list[str]:
    """More daemon flags for ours, from ``PYSCHEDULER_BENCH_FLAGS`` (split on
    spaces): experiments with a setting, e.g. ``--max-concurrent-binds=32``,
    without editing the harness (so the run's commit stays clean)."""
    return os.environ.get(BENCH_FLAGS_ENV, "").split()


def start(kind: SchedulerKind, plane: ControlPlane, workdir: Path) -> RunningScheduler:
    config = workdir / f"{kind}-scheduler.yaml"
    config.write_text(config_document(kind, plane.kubeconfig))
    port = free_port()
    if kind in CEILING_KINDS:
        argv = [
            sys.executable,
            "-m",
            "bench.ceiling",
            f"--kubeconfig={plane.kubeconfig}",
            f"--scheduler-name={PROFILE_NAMES[kind]}",
            f"--qps={CLIENT_QPS}",
            f"--port={port}",
            f"--bind-address={LOOPBACK}",
            *(["--events"] if kind is SchedulerKind.CEILING_EVENTS else []),
        ]
        process = ComponentProcess(str(kind), argv, plane.layout.logs / f"{kind}.log")
        process.start()
        return RunningScheduler(kind, process, f"http://{LOOPBACK}:{port}")
    if kind is SchedulerKind.OURS:
        argv = [
            str(Path(sys.executable).parent / "pyscheduler"),
            f"--config={config}",
            f"--kubeconfig={plane.kubeconfig}",
            f"--secure-port={port}",
            f"--bind-address={LOOPBACK}",
            "--v=0",
            f"--authorization-always-allow-paths={_UPSTREAM_ALLOWED_PATHS}",
            *extra_flags(),
        ]
        process = ComponentProcess("pyscheduler", argv, plane.layout.logs / "pyscheduler.log")
        process.start()
        return RunningScheduler(kind, process, f"https://{LOOPBACK}:{port}")
    process = plane.start_scheduler(
        config,
        extra_args=[
            f"--secure-port={port}",
            f"--bind-address={LOOPBACK}",
            f"--authorization-always-allow-paths={_UPSTREAM_ALLOWED_PATHS}",
        ],
    )
    return RunningScheduler(kind, process, f"https://{LOOPBACK}:{port}")


def http_session() -> aiohttp.ClientSession:
    """For the schedulers' endpoints: upstream's certificate is self-signed."""
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False))


async def get_text(session: aiohttp.ClientSession, url: str) -> tuple[int, str]:
    async with session.get(url, timeout=HTTP_TIMEOUT) as response:
        return response.status, await response.text()


async def wait_ready(
    session: aiohttp.ClientSession,
    scheduler: RunningScheduler,
    timeout: float,  # noqa: ASYNC109 - a deadline on a condition, not a sleep
) -> None:
    deadline = time.monotonic() + timeout
    delay = 0.05
    while True:
        scheduler.alive_pid()
        try:
            if (await get_text(session, f"{scheduler.base_url}/readyz"))[0] == 200:
                return
        except (aiohttp.ClientError, OSError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            raise SchedulerError(
                f"{scheduler.kind} scheduler not ready within {timeout:g}s:\n"
                f"{scheduler.process.tail()}"
            )
        await asyncio.sleep(delay)
        delay = min(delay * 1.5, 0.5)


async def scrape_metrics(session: aiohttp.ClientSession, scheduler: RunningScheduler) -> str:
    status, text = await get_text(session, f"{scheduler.base_url}/metrics")
    if status != 200:
        raise SchedulerError(f"GET {scheduler.base_url}/metrics: {status} {text[:300]}")
    return text


def stop(scheduler: RunningScheduler) -> None:
    """SIGTERM, then SIGKILL after a grace period; always reaps the process."""
    scheduler.process.stop()
