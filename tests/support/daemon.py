"""The ``pyscheduler`` console script as a real process, for integration tests.

``pyscheduler(kubeconfig, name, workdir)`` starts it with one profile ``name``
(or the given configuration), its output in a log file; ``Daemon`` waits on it
(failing at once, with the log, if it died), reads its endpoints (HTTPS,
optionally with a bearer token), and sends it
SIGTERM, SIGKILL or SIGUSR2. The process is always stopped and reaped on exit.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

import aiohttp

from localcluster.cluster import free_port
from localcluster.process import ComponentProcess
from scheduler.app.root import AppOptions
from tests.support.ops import ops_get
from tests.support.scheduler import scheduler_config
from tests.support.wait import ConditionTimeout, eventually

T = TypeVar("T")

PYSCHEDULER = Path(sys.executable).parent / "pyscheduler"
BIND_GRACE_SECONDS = 5.0
# SIGTERM to exit: drain binds (bounded by the bind grace), flush pod status
# and events (bounded by the flush grace), close; plus slack for a busy machine.
SHUTDOWN_DEADLINE = BIND_GRACE_SECONDS + AppOptions().flush_grace_seconds + 5.0
BURST = 150
# Paths the daemon serves without a token unless told otherwise: tests that do
# not test authorization read /metrics and /debug/... like the demo does.
OPEN_FOR_TESTS = "/healthz,/readyz,/livez,/metrics,/debug/*"
UPSTREAM_OPEN = "/healthz,/readyz,/livez"


class Daemon:
    """One ``pyscheduler`` process; its stdout and stderr go to a log file."""

    def __init__(self, process: ComponentProcess, port: int) -> None:
        self.process = process
        self.base = f"https://127.0.0.1:{port}"

    def report(self, problem: str) -> str:
        return f"{problem}\n--- pyscheduler log ---\n{self.process.tail(40)}"

    async def until(self, probe: Callable[[], Awaitable[T | None]], what: str) -> T:
        """``eventually``, but failing at once, with the log, if the process died."""

        async def alive_and_probe() -> T | None:
            if not self.process.running():
                code = self.process.exit_code()
                raise AssertionError(self.report(f"pyscheduler exited with code {code}"))
            return await probe()

        try:
            return await eventually(alive_and_probe, timeout=30, what=what)
        except ConditionTimeout as error:
            raise AssertionError(self.report(str(error))) from None

    async def get(self, path: str, token: str | None = None) -> tuple[int, str]:
        """GET over HTTPS (self-signed), with ``token`` as bearer if given."""
        return await ops_get(self.base, path, token)

    async def ready(self) -> tuple[int, str]:
        async def answered() -> tuple[int, str] | None:
            try:
                status, body = await self.get("/readyz")
            except aiohttp.ClientConnectionError:
                return None  # not listening yet
            return (status, body) if status == 200 else None

        return await self.until(answered, "/readyz 200")

    def signal(self, signum: int) -> None:
        pid = self.process.pid
        assert pid is not None, "pyscheduler was never started"
        os.kill(pid, signum)

    async def terminate(self) -> tuple[int | None, float]:
        """Send SIGTERM; return the exit code and the seconds it took to exit."""
        pid = self.process.pid
        assert pid is not None, "pyscheduler was never started"
        started = time.monotonic()
        os.kill(pid, signal.SIGTERM)

        async def exited() -> tuple[int | None] | None:
            return None if self.process.running() else (self.process.exit_code(),)

        try:
            (code,) = await eventually(exited, timeout=SHUTDOWN_DEADLINE, what="exit on SIGTERM")
        except ConditionTimeout as error:
            raise AssertionError(self.report(str(error))) from None
        return code, time.monotonic() - started


@asynccontextmanager
async def pyscheduler(
    kubeconfig: Path,
    name: str,
    workdir: Path,
    *extra: str,
    config_text: str | None = None,
    label: str = "",
    open_paths: str = OPEN_FOR_TESTS,
) -> AsyncIterator[Daemon]:
    """Run ``pyscheduler`` with one profile ``name`` (or ``config_text``);
    always stopped (and reaped) on exit, killed if it ignores SIGTERM.
    ``label`` tells apart several daemons of the same profile; ``open_paths``
    is its ``--authorization-always-allow-paths`` (``UPSTREAM_OPEN`` to test
    authorization as deployed)."""
    stem = f"{name}{label}"
    config = workdir / f"{stem}.yaml"
    config.write_text(config_text or scheduler_config(name))
    port = free_port()
    argv = [
        str(PYSCHEDULER),
        f"--config={config}",
        f"--kubeconfig={kubeconfig}",
        f"--secure-port={port}",
        "--bind-address=127.0.0.1",
        f"--bind-grace-seconds={BIND_GRACE_SECONDS:g}",
        f"--authorization-always-allow-paths={open_paths}",
        *extra,
    ]
    process = ComponentProcess("pyscheduler", argv, workdir / f"{stem}.log")
    process.start()
    try:
        yield Daemon(process, port)
    finally:
        await asyncio.to_thread(process.stop, SHUTDOWN_DEADLINE)
