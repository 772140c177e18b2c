"""``python -m bench.run``: this scheduler against upstream kube-scheduler.

Each scheduler runs on a fresh control plane of its own with the same nodes and
pods (see ``bench.runner``), in each mode the workload has (or ``--mode``):
ours, upstream with our plugins (the headline), upstream with its full
default profile, the bare ceiling binder, and the ceiling binder that also
writes the "Scheduled" event per pod (``ceiling-events``). Each mode's
results (min / median / max over ``--repeat`` rounds, ratios) are printed
and written to
``--results-dir`` as ``<preset>-<mode>.json``, ``.md`` and ``.png`` (preset
``custom`` when sizes are overridden). Exit status: 0 when every run bound
every pod without overcommitting a node, 1 otherwise or when a run failed, 2
for bad arguments.

Examples::

    python -m bench.run                       # SchedulingBasic: both modes, 3 rounds
    python -m bench.run --workload scale      # 15000 nodes, 30000 pods, backlog
    python -m bench.run --workload small --mode backlog --repeat 1
    python -m bench.run --nodes 500 --pods 2000 --schedulers ours,ceiling
    python -m bench.run --workload churn --rate 50   # created, run and deleted at 50 pods/s
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import signal
import subprocess
import sys
import sysconfig
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from bench.apiclient import ApiError
from bench.podwatch import WatchError
from bench.profiles import our_default_profile, same_plugins_profile
from bench.publish import RESULTS_DIR, ROOT, markdown, stem, write
from bench.report import document
from bench.results import RunResult
from bench.runner import BenchError, RunOptions, run_benchmark
from bench.schedulers import (
    BENCH_FLAGS_ENV,
    CLIENT_QPS,
    PROFILE_NAMES,
    SchedulerError,
    SchedulerKind,
    extra_flags,
)
from bench.workload import DEFAULT_PRESET, PRESETS, Mode
from localcluster import BinaryError, ControlPlaneError, control_plane_binary

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def _kinds(text: str) -> tuple[SchedulerKind, ...]:
    try:
        kinds = tuple(SchedulerKind(name.strip()) for name in text.split(",") if name.strip())
    except ValueError as error:
        choices = ",".join(kind.value for kind in SchedulerKind)
        raise argparse.ArgumentTypeError(f"{error}; choose from {choices}") from None
    if not kinds or len(set(kinds)) != len(kinds):
        raise argparse.ArgumentTypeError("name each scheduler once")
    return kinds


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return value


def _rate(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.run",
        description="Scheduling throughput of pyscheduler against upstream kube-scheduler.",
    )
    parser.add_argument(
        "--workload",
        choices=sorted(PRESETS),
        default=DEFAULT_PRESET,
        help="preset sizes: "
        + "; ".join(
            f"{key}: {w.nodes} nodes, {w.init_pods} init + {w.pods} pods"
            for key, w in PRESETS.items()
        ),
    )
    parser.add_argument("--nodes", type=_positive, help="override the preset's node count")
    parser.add_argument("--init-pods", type=_count, help="override the preset's init pods")
    parser.add_argument("--pods", type=_positive, help="override the preset's measured pods")
    parser.add_argument(
        "--mode",
        choices=[*(str(mode) for mode in Mode), "both"],
        help="streaming, backlog, both (those two) or churn (default: the preset's modes)",
    )
    parser.add_argument(
        "--rate",
        type=_rate,
        help="churn mode: measured pods created per second (default: the preset's, 100)",
    )
    parser.add_argument(
        "--schedulers",
        type=_kinds,
        default=tuple(SchedulerKind),
        help="comma-separated, in the first round's order; later rounds alternate "
        "(default: " + ",".join(SchedulerKind) + ")",
    )
    parser.add_argument("--repeat", type=_positive, default=3, help="rounds (default 3)")
    parser.add_argument("--creators", type=_positive, default=30, help="parallel pod creators")
    parser.add_argument(
        "--timeout",
        type=float,
        help="seconds allowed for the init pods, and again for the measured pods "
        "(default: the preset's, 600 or 3600 for scale)",
    )
    parser.add_argument(
        "--profile",
        action=argparse.BooleanOptionalAction,
        help="sample each scheduler's CPU while measuring (py-spy for ours, pprof for "
        "upstream): snapshot update and watch decoding CPU per pod and the top functions "
        "(default: on for the scale and churn presets only)",
    )
    parser.add_argument(
        "--results-dir",
        type=Path,
        default=RESULTS_DIR,
        help="where <preset>-<mode>.json/.md/.png go (default bench/results)",
    )
    return parser.parse_args(argv)


def commit() -> str:
    """The checked-out commit, ``+dirty`` when the work tree has changes."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
        return done.stdout.strip() if done.returncode == 0 else ""

    head = git("rev-parse", "--short=12", "HEAD") or "unknown"
    return f"{head}+dirty" if git("status", "--porcelain", "--untracked-files=no") else head


def _command(argv: Sequence[str]) -> str:
    """The command line, with the extra daemon flags of ours when set."""
    words = ["python -m bench.run", *argv]
    flags = extra_flags()
    if flags:
        words.insert(0, f"{BENCH_FLAGS_ENV}={shlex.quote(' '.join(flags))}")
    return " ".join(words)


def context(
    args: argparse.Namespace, options: RunOptions, preset: str, argv: Sequence[str]
) -> dict[str, Any]:
    same = same_plugins_profile(
        our_default_profile(PROFILE_NAMES[SchedulerKind.OURS]),
        PROFILE_NAMES[SchedulerKind.UPSTREAM],
    )
    return {
        "benchmark": "pyscheduler vs kube-scheduler, scheduler_perf-style SchedulingThroughput",
        "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": _command(argv),
        "commit": commit(),
        "preset": preset,
        "mode": str(options.mode),
        "workload": options.workload.to_json(),
        "schedulers": [str(kind) for kind in args.schedulers],
        "same_plugins": {"plugins": list(same.plugins), "ours_only": list(same.ours_only)},
        "repeat": args.repeat,
        "creators": options.creators,
        "client_qps": CLIENT_QPS,
        "timeout_seconds": options.timeout_seconds,
        "profiled": options.profile,
        **({"churn": options.workload.churn.to_json()} if options.mode is Mode.CHURN else {}),
        "sample_interval_seconds": 1.0,
        "machine": machine(),
    }


def machine() -> dict[str, Any]:
    """What the figures were measured on: the interpreter too, since its build
    moves our CPU per pod (and only ours) by a third (docs/benchmarks.md)."""
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "python_executable": os.path.realpath(sys.executable),
        "python_configure": sysconfig.get_config_var("CONFIG_ARGS") or "",
        "python_loop_ns": python_loop_ns(),
        "control_plane_binary": str(control_plane_binary()),
    }


def python_loop_ns(iterations: int = 2_000_000) -> float:
    """Nanoseconds per iteration of a plain ``for``/``+=`` loop, best of three:
    one figure to compare interpreters and machines by (figures measured
    with it: docs/benchmarks.md, "Which Python")."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        total = 0
        for index in range(iterations):
            total += index
        best = min(best, time.perf_counter() - started)
    return round(best * 1e9 / iterations, 1)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def modes(args: argparse.Namespace, preset_modes: Sequence[Mode]) -> list[Mode]:
    if args.mode is None:
        return list(preset_modes)
    both = [Mode.STREAMING, Mode.BACKLOG]
    return both if args.mode == "both" else [Mode(args.mode)]


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(arguments)
    preset = PRESETS[args.workload]
    workload = preset.resized(args.nodes, args.init_pods, args.pods, args.rate)
    key = args.workload if workload is preset or workload == preset else "custom"
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if inherited as ignored
    all_correct = True
    try:
        for mode in modes(args, workload.modes):
            options = RunOptions(
                workload,
                mode=mode,
                creators=args.creators,
                timeout_seconds=workload.timeout_seconds if args.timeout is None else args.timeout,
                profile=workload.profile if args.profile is None else args.profile,
            )
            about = context(args, options, key, arguments)
            _say(
                f"workload {workload.name}: {workload.nodes} nodes, {workload.init_pods} init "
                f"pods, {workload.pods} measured pods; mode {mode}; schedulers "
                f"{','.join(about['schedulers'])}; {args.repeat} round(s)"
            )
            runs: list[RunResult] = run_benchmark(options, args.schedulers, args.repeat, _say)
            report = document(runs, about)
            print(markdown(report, None))
            for path in write(report, args.results_dir, stem(key, str(mode))):
                _say(f"wrote {path}")
            all_correct = all_correct and report["all_correct"]
    except KeyboardInterrupt:
        _say("interrupted")
        return EXIT_INTERRUPTED
    except (
        BenchError,
        SchedulerError,
        ApiError,
        WatchError,
        ControlPlaneError,
        BinaryError,
    ) as error:
        _say(f"benchmark failed: {error}")
        return EXIT_FAILED
    return 0 if all_correct else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
