"""``pyscheduler simulate``: the command line.

    pyscheduler simulate SNAPSHOT... [--config FILE] [--pods FILE]...
        [--add-nodes TEMPLATE=COUNT]... [--remove-node NAME]... [--cordon NAME]...
        [--seed N] [-o table|json|yaml]

Exit codes: 0 when the run completed (whatever the pods' fate, unless
``--fail-on-unschedulable``), 1 when simulated time ran out with pods still
retrying, 2 for malformed input or configuration (one line naming the file,
document and field), 3 with ``--fail-on-unschedulable`` when a pod was not
placed (a CI gate: "would these pods fit?").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
from collections.abc import Iterator, Sequence
from typing import TextIO

from scheduler.config import ConfigError, SchedulerConfiguration, load_config
from scheduler.engine.assembly import build_registry, resolve
from scheduler.simulate.edits import EditError, add_nodes, cordon, parse_count, remove_node
from scheduler.simulate.report import (
    as_json,
    as_yaml,
    build_report,
    pending_keys,
    skipped_pending,
    table,
)
from scheduler.simulate.run import DEFAULT_MAX_SECONDS, Outcome, Simulation, SimulationError
from scheduler.simulate.snapshot import Snapshot, SnapshotError, load_files, snapshot_time

EXIT_INPUT = 2
EXIT_TIMED_OUT = 1
EXIT_UNSCHEDULABLE = 3
PROGRESS_PENDING_PODS = 1000
PROG = "pyscheduler simulate"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Schedule a snapshot's pending pods with the real plugins, offline.",
    )
    p.add_argument(
        "snapshot", nargs="+", help="YAML from kubectl get ... -o yaml (Lists or objects)"
    )
    p.add_argument("--config", help="KubeSchedulerConfiguration YAML (default: built-in)")
    p.add_argument("--pods", action="append", default=[], help="extra pods to place (YAML)")
    p.add_argument(
        "--add-nodes",
        action="append",
        default=[],
        metavar="TEMPLATE=COUNT",
        help="add COUNT copies of node TEMPLATE (a node name or a Node YAML file)",
    )
    p.add_argument("--remove-node", action="append", default=[], metavar="NAME")
    p.add_argument("--cordon", action="append", default=[], metavar="NAME")
    p.add_argument("--seed", type=int, help="fix the random choice among equal scores")
    p.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    p.add_argument(
        "--max-seconds",
        type=float,
        default=DEFAULT_MAX_SECONDS,
        help="bound on simulated time (pods retrying after errors)",
    )
    p.add_argument(
        "--fail-on-unschedulable",
        action="store_true",
        help=f"exit {EXIT_UNSCHEDULABLE} when any pod is not placed (for CI)",
    )
    progress = p.add_mutually_exclusive_group()
    progress.add_argument("--progress", action="store_true", help="always report progress")
    progress.add_argument("--quiet", action="store_true", help="never report progress")
    return p


class InputError(Exception):
    """Malformed input: printed as one line, exit code 2."""


class _OneLine(logging.Formatter):
    """A log record as one line: an exception's type and message, never its
    traceback (a user of a command line tool gets no tracebacks)."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        error = record.exc_info[1] if record.exc_info else None
        if error is not None:
            message += f" ({type(error).__name__}: {error})"
        return f"{PROG}: {record.levelname.lower()}: {message}"


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a record comes."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


@contextlib.contextmanager
def one_line_logging() -> Iterator[None]:
    """While inside: warnings and errors on stderr, one line each; the
    engine's own per-pod logs (unschedulable pods, retries) only when they
    are errors. The previous logging set-up is restored on exit."""
    root, engine = logging.getLogger(), logging.getLogger("scheduler")
    saved = (list(root.handlers), root.level, engine.level)
    handler = _Stderr()
    handler.setFormatter(_OneLine())
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    engine.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.handlers[:], level, engine_level = saved
        root.setLevel(level)
        engine.setLevel(engine_level)


def prepare(args: argparse.Namespace) -> tuple[SchedulerConfiguration, Snapshot]:
    """Configuration and the edited snapshot; raises InputError."""
    try:
        config = load_config(args.config)
    except ConfigError as error:
        problems = "; ".join(error.problems)
        raise InputError(f"invalid configuration {args.config}: {problems}") from None
    try:
        snapshot = load_files(args.snapshot)
        if args.pods:
            extra = load_files(args.pods)
            for obj in extra.objects + extra.passthrough:
                if obj.get("kind") != "Pod":
                    raise InputError(f"--pods: {obj.get('kind')} is not a Pod")
            snapshot.extend(extra)
        for name in args.remove_node:
            remove_node(snapshot, name)
        for name in args.cordon:
            cordon(snapshot, name)
        for value in args.add_nodes:
            template, count = parse_count("--add-nodes", value)
            add_nodes(snapshot, template, count)
    except (SnapshotError, EditError) as error:
        raise InputError(str(error)) from None
    return config, snapshot


def simulate(
    config: SchedulerConfiguration,
    snapshot: Snapshot,
    *,
    seed: int | None,
    progress: TextIO | None = None,
    max_seconds: float = DEFAULT_MAX_SECONDS,
    wall: float | None = None,
) -> tuple[Outcome, list[str], dict[str, int]]:
    """Run the simulation; returns the outcome, the keys of the pods it placed
    and the pending pods of other schedulers it left alone (by name)."""
    registry = build_registry()
    try:
        profiles = resolve(config, registry)
    except ConfigError as error:
        raise InputError(f"invalid configuration: {'; '.join(error.problems)}") from None
    names = {profile.scheduler_name for profile in profiles}
    pending = pending_keys(snapshot.objects, names)
    skipped = skipped_pending(snapshot.objects, names)

    def report(line: str) -> None:
        if progress is not None:
            print(line, file=progress, flush=True)

    if wall is None:
        wall = snapshot_time(snapshot.objects)
    simulation = Simulation(
        config,
        profiles,
        registry,
        snapshot.objects,
        seed=seed,
        wall=wall,
        progress=report if progress is not None else None,
        max_seconds=max_seconds,
    )
    try:
        return asyncio.run(simulation.run()), pending, skipped
    except SimulationError as error:
        raise InputError(str(error)) from None
    except ExceptionGroup as group:  # raised inside the run's TaskGroup
        failed = group.subgroup(SimulationError)
        if failed is None:
            raise
        raise InputError(str(failed.exceptions[0])) from None


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    args = parser().parse_args(argv)
    with one_line_logging():
        return _main(args, out or sys.stdout)


def _main(args: argparse.Namespace, out: TextIO) -> int:
    try:
        config, snapshot = prepare(args)
        show_progress = args.progress or (
            not args.quiet
            and sum(1 for o in snapshot.objects if o.get("kind") == "Pod") >= PROGRESS_PENDING_PODS
        )
        outcome, pending, skipped = simulate(
            config,
            snapshot,
            seed=args.seed,
            progress=sys.stderr if show_progress else None,
            max_seconds=args.max_seconds,
        )
    except InputError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return EXIT_INPUT
    stats = outcome.stats
    if show_progress:
        print(
            f"{PROG}: {len(pending)} pods in {stats.cpu_seconds:.2f}s CPU, "
            f"{stats.simulated_seconds:.0f}s simulated",
            file=sys.stderr,
        )
    report = build_report(
        outcome.cluster,
        snapshot.objects,
        pending,
        {
            "seed": args.seed,
            "cpuSeconds": round(stats.cpu_seconds, 3),
            "simulatedSeconds": stats.simulated_seconds,
            "timedOut": stats.timed_out,
        },
    )
    report.skipped = skipped
    if args.output == "yaml":
        out.write(as_yaml(outcome.cluster, snapshot.passthrough))
    else:
        out.write(as_json(report) if args.output == "json" else table(report))
    if args.fail_on_unschedulable and report.unplaced and not stats.timed_out:
        return EXIT_UNSCHEDULABLE
    return EXIT_TIMED_OUT if stats.timed_out else 0
