"""One control-plane component run as a child process with its log in a file.

Invariants:
- A child never outlives this process: it is started in its own session (so a
  terminal's Ctrl-C does not reach it out of order) with the parent-death
  signal set, so that even a SIGKILLed test run takes its children with it.
- The kernel sends the parent-death signal when the *thread* that forked the
  child exits, so every child is forked from one launcher thread that lives
  as long as the process; a restart called from a short-lived worker thread
  (``asyncio.to_thread``) must not kill the component it started.
- ``stop`` is idempotent and escalates from SIGTERM to SIGKILL after a grace
  period; it always reaps the child.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO

_PR_SET_PDEATHSIG = 1
# Resolved in the parent: the child may only make async-signal-safe calls.
_LIBC = ctypes.CDLL(None, use_errno=True)


_launcher_lock = threading.Lock()
_launcher: list[ThreadPoolExecutor] = []


def _launcher_thread() -> ThreadPoolExecutor:
    """The one long-lived thread that forks every component (see above)."""
    with _launcher_lock:
        if not _launcher:
            _launcher.append(ThreadPoolExecutor(1, thread_name_prefix="component-launcher"))
        return _launcher[0]


def _die_with_parent() -> None:
    """Runs in the child between fork and exec: ask the kernel for SIGKILL when
    the parent dies, so no component is orphaned by a crashed test run."""
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class ComponentProcess:
    """A named child process whose stdout and stderr go to ``log_path``."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self._popen: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen else None

    def start(self) -> None:
        if self.running():
            raise RuntimeError(f"{self.name} is already running")
        self._log = self.log_path.open("ab")
        self._log.write(f"--- starting: {' '.join(self.argv)}\n".encode())
        self._log.flush()
        log = self._log
        self._popen = (
            _launcher_thread()
            .submit(
                subprocess.Popen,
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,  # only prctl, no locks taken
            )
            .result()
        )

    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def exit_code(self) -> int | None:
        return self._popen.poll() if self._popen else None

    def stop(self, grace_seconds: float = 10.0) -> None:
        popen, self._popen = self._popen, None
        if popen is not None:
            if popen.poll() is None:
                popen.send_signal(signal.SIGTERM)
                try:
                    popen.wait(timeout=grace_seconds)
                except subprocess.TimeoutExpired:
                    os.killpg(popen.pid, signal.SIGKILL)
                    popen.wait()
            else:
                popen.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def tail(self, max_lines: int = 60) -> str:
        """The last lines of this component's log, for failure reports."""
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return ""
        return "\n".join(lines[-max_lines:])
