"""Where a scheduler's CPU goes while the clock runs: sampled profiles of
either scheduler, reduced to the time spent updating the snapshot and the
top functions by own time.

- ours (and the ceiling, also Python): ``py-spy record --pid P --nonblocking``
  attached when the clock starts and stopped (SIGINT) when it ends; its raw
  output is collapsed stacks, one ``frame;frame;... count`` line each. Only
  busy samples are recorded (no ``--idle``), so samples / rate is CPU time;
- upstream: Go's ``/debug/pprof/profile?seconds=W`` fetched window after
  window while the clock runs (the last window may end up to W seconds
  late, when the scheduler is idle), reduced by ``go tool pprof -top``.

"Snapshot update" is the CPU time under our ``Cache.update_snapshot`` and
upstream's ``(*cacheImpl).UpdateSnapshot``, the same step of each cycle.
"Watch decoding" (what grows with churn) is ours under the watch stream
(``KubeClient.watch``: reading chunks, ``scheduler.kube.wire``'s line
splitting and JSON parsing) or the informers' compaction
(``scheduler.informers.compact``), and upstream's under
``(*StreamWatcher).receive`` (protobuf decoding of watch frames); "informers"
is all of that plus the stores and the event handlers they call (ours under
``scheduler/informers/``, upstream's under client-go's ``tools/cache``).
py-spy counts a thread as busy whenever it is not waiting, also while it is
runnable but not running, which on a loaded machine is more than its CPU
time; so only shares of the samples are used, scaled by the process's CPU
time read from ``/proc`` over the same clock.
Parsing is pure and tested; a missing tool (py-spy, go) gives no profile,
never a failed run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

PYSPY_RATE = 100
PPROF_WINDOW_SECONDS = 2
TOP = 12
OUR_SNAPSHOT_FRAME = "update_snapshot ("
GO_SNAPSHOT_FOCUS = "UpdateSnapshot"  # (*cacheImpl).UpdateSnapshot, the one function so named
# (function prefix, file) of our frames that decode watch events.
OUR_DECODE_FRAMES = (
    ("", "kube/wire.py"),
    ("", "informers/compact.py"),
    ("watch (", "kube/client.py"),
)
OUR_INFORMER_FILES = "scheduler/informers/"
GO_DECODE_FOCUS = r"StreamWatcher\)\.receive"
GO_INFORMER_FOCUS = r"client-go/tools/cache|StreamWatcher\)\.receive"
# Functions under nearly every sample (the event loop, the entry point) say
# nothing about where the time goes; the cumulative list leaves them out.
ROOT_SHARE = 0.95
_GO_TOTAL = re.compile(
    r"Showing nodes accounting for ([\d.]+)(\w+), [\d.]+% of ([\d.]+)(\w+) total"
)
_GO_ROW = re.compile(r"^\s*([\d.]+)(\w*)\s+[\d.]+%\s+[\d.]+%\s+([\d.]+)(\w*)\s+[\d.]+%\s+(.+)$")
_LINE = re.compile(r":\d+\)$")
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "mins": 60.0, "hrs": 3600.0}


@dataclass(frozen=True)
class CpuProfile:
    """CPU seconds sampled, those under the snapshot update, the top
    functions by own (self) CPU seconds and by cumulative CPU seconds (the
    function and everything it called)."""

    total_seconds: float
    snapshot_seconds: float
    top: tuple[tuple[str, float], ...] = field(default_factory=tuple)
    cumulative: tuple[tuple[str, float], ...] = field(default_factory=tuple)
    decode_seconds: float = 0.0
    informer_seconds: float = 0.0

    @property
    def snapshot_share(self) -> float:
        return self._share(self.snapshot_seconds)

    @property
    def decode_share(self) -> float:
        """Of the samples, those decoding watch events."""
        return self._share(self.decode_seconds)

    @property
    def informer_share(self) -> float:
        """Of the samples, those in the informers (decoding included)."""
        return self._share(self.informer_seconds)

    def _share(self, seconds: float) -> float:
        return seconds / self.total_seconds if self.total_seconds > 0 else 0.0

    @property
    def top_shares(self) -> tuple[tuple[str, float], ...]:
        """The top functions by own time with their share of the samples (0..1)."""
        return self._shares(self.top)

    @property
    def cumulative_shares(self) -> tuple[tuple[str, float], ...]:
        """The top functions by cumulative time with their share (0..1)."""
        return self._shares(self.cumulative)

    def _shares(self, rows: tuple[tuple[str, float], ...]) -> tuple[tuple[str, float], ...]:
        if self.total_seconds <= 0:
            return ()
        return tuple((name, seconds / self.total_seconds) for name, seconds in rows)


def parse_collapsed(lines: Iterable[str], rate: int = PYSPY_RATE) -> CpuProfile:
    """py-spy's raw (collapsed stacks) output."""
    total = snapshot = decode = informer = 0
    own: dict[str, int] = {}
    cumulative: dict[str, int] = {}
    for line in lines:
        stack, _, count_text = line.rstrip().rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        if OUR_SNAPSHOT_FRAME in stack:
            snapshot += count
        frames = stack.split(";")
        if any(_decodes(frame) for frame in frames):
            decode += count
        if OUR_INFORMER_FILES in stack:
            informer += count
        own[frames[-1]] = own.get(frames[-1], 0) + count
        for function in {_without_line(frame) for frame in frames}:
            cumulative[function] = cumulative.get(function, 0) + count

    def seconds(counts: dict[str, int]) -> tuple[tuple[str, float], ...]:
        ranked = sorted(counts.items(), key=lambda item: -item[1])[:TOP]
        return tuple((name, count / rate) for name, count in ranked)

    below_roots = {name: count for name, count in cumulative.items() if count < ROOT_SHARE * total}
    return CpuProfile(
        total / rate,
        snapshot / rate,
        seconds(own),
        seconds(below_roots),
        decode / rate,
        informer / rate,
    )


def _decodes(frame: str) -> bool:
    return any(frame.startswith(name) and file in frame for name, file in OUR_DECODE_FRAMES)


def _without_line(frame: str) -> str:
    """``f (file.py:12)`` -> ``f (file.py)``: a function once, whatever line."""
    return _LINE.sub(")", frame)


def _go_seconds(value: str, unit: str) -> float:
    return float(value) * _GO_UNITS.get(unit, 1.0)


def parse_pprof_top(
    text: str, cumulative: bool = False
) -> tuple[float, float, tuple[tuple[str, float], ...]]:
    """``go tool pprof -top`` output: (shown seconds, total seconds, rows of
    (function, flat seconds), or cumulative seconds if asked)."""
    shown = total = 0.0
    rows: list[tuple[str, float]] = []
    for line in text.splitlines():
        header = _GO_TOTAL.search(line)
        if header:
            shown = _go_seconds(header.group(1), header.group(2))
            total = _go_seconds(header.group(3), header.group(4))
            continue
        row = _GO_ROW.match(line)
        if row:
            value = row.group(3, 4) if cumulative else row.group(1, 2)
            seconds = _go_seconds(*value)
            if seconds > 0:
                rows.append((row.group(5).strip(), seconds))
    return shown, total, tuple(rows)


class PySpy:
    """``py-spy record`` attached to a running Python process."""

    def __init__(self, pid: int, output: Path) -> None:
        self._output = output
        executable = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        self._process = subprocess.Popen(
            [
                executable,
                "record",
                f"--pid={pid}",
                f"--rate={PYSPY_RATE}",
                "--format=raw",
                f"--output={output}",
                "--nonblocking",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    @staticmethod
    def available() -> bool:
        return bool(shutil.which("py-spy")) or os.access(
            Path(sys.executable).parent / "py-spy", os.X_OK
        )

    def stop(self) -> CpuProfile | None:
        self._process.send_signal(signal.SIGINT)
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
            return None
        if not self._output.exists():
            return None
        return parse_collapsed(self._output.read_text().splitlines())


class GoProfiler:
    """Consecutive pprof CPU windows from a Go process's debug endpoint."""

    def __init__(self, session: aiohttp.ClientSession, base_url: str, directory: Path) -> None:
        self._session = session
        self._url = f"{base_url}/debug/pprof/profile?seconds={PPROF_WINDOW_SECONDS}"
        self._directory = directory
        self._files: list[Path] = []
        self._stopping = asyncio.Event()
        self._task = asyncio.create_task(self._windows(), name="pprof")

    @staticmethod
    def available() -> bool:
        return shutil.which("go") is not None

    async def _windows(self) -> None:
        timeout = aiohttp.ClientTimeout(total=PPROF_WINDOW_SECONDS + 30)
        while not self._stopping.is_set():
            with contextlib.suppress(aiohttp.ClientError, OSError, TimeoutError):
                async with self._session.get(self._url, timeout=timeout) as response:
                    body = await response.read()
                    if response.status == 200 and body:
                        path = self._directory / f"cpu-{len(self._files):04d}.pb.gz"
                        path.write_bytes(body)
                        self._files.append(path)
                        continue
            await asyncio.sleep(0.2)

    async def stop(self) -> CpuProfile | None:
        """After the window in flight; None if no window was collected."""
        self._stopping.set()
        await self._task
        if not self._files:
            return None
        return await asyncio.to_thread(_go_profile, self._files)


def _pprof_top(files: list[Path], *extra: str, nodes: int = TOP) -> str:
    done = subprocess.run(
        ["go", "tool", "pprof", "-top", f"-nodecount={nodes}", *extra, *map(str, files)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done.stdout if done.returncode == 0 else ""


def _go_profile(files: list[Path]) -> CpuProfile | None:
    text = _pprof_top(files)
    if not text:
        return None
    _, total, rows = parse_pprof_top(text)
    _, _, cumulative = parse_pprof_top(_pprof_top(files, "-cum"), cumulative=True)
    # Every node under the focus, so that the shown sum is the focused total.
    return CpuProfile(
        total,
        _focused_seconds(files, GO_SNAPSHOT_FOCUS),
        rows,
        cumulative,
        _focused_seconds(files, GO_DECODE_FOCUS),
        _focused_seconds(files, GO_INFORMER_FOCUS),
    )


def _focused_seconds(files: list[Path], focus: str) -> float:
    """CPU seconds of the samples with a frame matching ``focus`` (a regex)."""
    # Every node under the focus, so that the shown sum is the focused total.
    shown, _, _ = parse_pprof_top(_pprof_top(files, f"-focus={focus}", nodes=1_000_000))
    return shown
