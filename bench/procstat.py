"""CPU time and peak memory of one process, read from Linux ``/proc``.

- CPU seconds: ``utime + stime`` of ``/proc/<pid>/stat`` (the process itself,
  not its children), in clock ticks; ``children_cpu_seconds`` adds up the
  live children's (pyscheduler's process listeners, e.g. the
  AutoscaleEnforcer's agent process; kube-scheduler forks none);
- peak RSS: ``VmHWM`` of ``/proc/<pid>/status``, the resident set's
  high-water mark since the process started.

Both must be read while the process is alive: its ``/proc`` entry goes when
it exits, so the harness samples just before stopping a scheduler.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
# Fields 14 and 15 of /proc/<pid>/stat, counted after the ")" that ends the
# command name (which may itself hold spaces and parentheses).
_UTIME_AFTER_COMM = 11
_STIME_AFTER_COMM = 12


@dataclass(frozen=True)
class ProcessUsage:
    cpu_seconds: float
    peak_rss_bytes: int


def cpu_seconds(stat: str, ticks_per_second: int) -> float:
    fields = stat[stat.rindex(")") + 2 :].split()
    ticks = int(fields[_UTIME_AFTER_COMM]) + int(fields[_STIME_AFTER_COMM])
    return ticks / ticks_per_second


def peak_rss_bytes(status: str) -> int:
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            value, unit = line.split()[1:3]
            if unit != "kB":
                raise ValueError(f"unexpected VmHWM unit: {line!r}")
            return int(value) * 1024
    raise ValueError("no VmHWM line in /proc/<pid>/status")


def read_usage(pid: int) -> ProcessUsage:
    base = PROC / str(pid)
    return ProcessUsage(
        cpu_seconds=cpu_seconds((base / "stat").read_text(), os.sysconf("SC_CLK_TCK")),
        peak_rss_bytes=peak_rss_bytes((base / "status").read_text()),
    )


def child_pids(pid: int) -> list[int]:
    """The live children of ``pid`` (every thread's ``children`` list)."""
    found: list[int] = []
    for task in (PROC / str(pid) / "task").iterdir():
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return found


def children_cpu_seconds(pid: int) -> float:
    """CPU seconds of ``pid``'s live children (a child gone meanwhile counts 0)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for child in child_pids(pid):
        try:
            total += cpu_seconds((PROC / str(child) / "stat").read_text(), ticks)
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total
