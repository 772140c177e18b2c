"""CPU time and peak memory of one process, read from Linux ``/proc``.

- CPU seconds: ``utime + stime`` of ``/proc/<pid>/stat`` (the process itself,
  not its children), in clock ticks; ``children_cpu_seconds`` adds up the
  live children's (pyscheduler's process listeners, e.g. the
  AutoscaleEnforcer's agent process; kube-scheduler forks none);
- peak RSS: ``VmHWM`` of ``/proc/<pid>/status``, the resident set's
  high-water mark since the process started.

Both must be read while the process is alive: its ``/proc`` entry goes when
it exits, so the harness samples just before stopping a scheduler.
``wait_until_idle`` (the settling after the clock) only reads and sleeps.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
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


SETTLE_INTERVAL = 0.1
SETTLE_IDLE_SHARE = 0.1
SETTLE_QUIET_INTERVALS = 2
SETTLE_LIMIT = 10.0


async def wait_until_idle(
    read_cpu: Callable[[], float],
    *,
    interval: float = SETTLE_INTERVAL,
    idle_share: float = SETTLE_IDLE_SHARE,
    quiet_intervals: int = SETTLE_QUIET_INTERVALS,
    limit: float = SETTLE_LIMIT,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> float:
    """Wait until a process has finished the work it still had queued: until
    its CPU has been at most ``idle_share`` of each of ``quiet_intervals``
    intervals in a row (a write waiting for its answer costs no CPU, so one
    quiet interval is not proof enough), or for ``limit`` seconds at most.
    Returns the seconds waited (a multiple of ``interval``). The benchmark
    waits so after the clock stops: a scheduler that writes its last events
    after its last bind is charged for them."""
    last = read_cpu()
    quiet = 0
    steps = max(1, round(limit / interval))
    for step in range(1, steps + 1):
        await sleep(interval)
        now = read_cpu()
        quiet = quiet + 1 if now - last <= idle_share * interval else 0
        if quiet >= quiet_intervals:
            return step * interval
        last = now
    return steps * interval
