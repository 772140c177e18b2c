"""``python -m bench.run``: this scheduler against upstream kube-scheduler.

Each scheduler runs on a fresh control plane of its own with the same nodes and
pods (see ``bench.runner``); the table gives the means over ``--repeat``
rounds and the ratios ours/upstream. Exit status: 0 when every run bound every
pod without overcommitting a node, 1 otherwise or when a run failed, 2 for
bad arguments.

Examples::

    python -m bench.run                       # SchedulingBasic: 5000 nodes, 1000 + 5000 pods
    python -m bench.run --workload small --repeat 3 --out small.json
    python -m bench.run --nodes 500 --pods 2000 --schedulers ours
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import orjson

from bench.apiclient import ApiError
from bench.podwatch import WatchError
from bench.report import document, table
from bench.results import RunResult
from bench.runner import BenchError, RunOptions, run_benchmark
from bench.schedulers import CLIENT_QPS, SchedulerError, SchedulerKind
from bench.workload import DEFAULT_PRESET, PRESETS
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
        "--schedulers",
        type=_kinds,
        default=(SchedulerKind.OURS, SchedulerKind.UPSTREAM),
        help="comma-separated, in the first round's order; later rounds alternate "
        "(default: ours,upstream)",
    )
    parser.add_argument("--repeat", type=_positive, default=1, help="rounds (default 1)")
    parser.add_argument("--creators", type=_positive, default=30, help="parallel pod creators")
    parser.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        help="seconds allowed for the init pods, and again for the measured pods (default 600)",
    )
    parser.add_argument("--out", type=Path, help="write the JSON report here")
    return parser.parse_args(argv)


def context(args: argparse.Namespace, options: RunOptions) -> dict[str, Any]:
    return {
        "benchmark": "pyscheduler vs kube-scheduler, scheduler_perf-style SchedulingThroughput",
        "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": " ".join(["python -m bench.run", *sys.argv[1:]]),
        "workload": options.workload.to_json(),
        "schedulers": [str(kind) for kind in args.schedulers],
        "repeat": args.repeat,
        "creators": options.creators,
        "client_qps": CLIENT_QPS,
        "sample_interval_seconds": 1.0,
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "control_plane_binary": str(control_plane_binary()),
        },
    }


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    workload = PRESETS[args.workload].resized(args.nodes, args.init_pods, args.pods)
    options = RunOptions(workload, creators=args.creators, timeout_seconds=args.timeout)
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if inherited as ignored
    try:
        about = context(args, options)
        _say(
            f"workload {workload.name}: {workload.nodes} nodes, {workload.init_pods} init pods, "
            f"{workload.pods} measured pods; schedulers {','.join(about['schedulers'])}; "
            f"{args.repeat} round(s)"
        )
        runs: list[RunResult] = run_benchmark(options, args.schedulers, args.repeat, _say)
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
    report = document(runs, about)
    print(table(runs))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
        _say(f"wrote {args.out}")
    return 0 if report["all_correct"] else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
