"""Command line: ``pyscheduler --config FILE [--kubeconfig FILE]``.

Loads and validates the configuration first: a bad file stops start-up with a
message naming the field and the problem (exit code 2), before any connection
is made. SIGTERM and SIGINT stop it in order; SIGUSR2 logs the cache
comparer's report (``scheduler.cachedebug``). Runs against ``--kubeconfig``, the config's
``clientConnection.kubeconfig``, or the in-cluster service account. A resource
type the API server does not serve (a CRD a plugin needs, not installed)
stops start-up with one error line naming it (exit code 3).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence

from scheduler.app import AppOptions, SchedulerApp, build_registry, resolve
from scheduler.config import ConfigError, SchedulerConfiguration, load_config
from scheduler.informers import ResourceNotServed
from scheduler.kube.client import KubeClient
from scheduler.kube.connection import ConfigError as ConnectionConfigError
from scheduler.leaderelection import LeadershipLost
from scheduler.logsetup import configure_logging

log = logging.getLogger("pyscheduler")
USER_AGENT = "pyscheduler"
EXIT_CONFIG = 2
EXIT_LOST_LEADERSHIP = 1
EXIT_RESOURCE_NOT_SERVED = 3


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="pyscheduler", description=__doc__)
    parser.add_argument("--config", help="KubeSchedulerConfiguration YAML file")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster)")
    parser.add_argument("--bind-address", default="0.0.0.0", help="address for /metrics, /healthz")
    parser.add_argument("--port", type=int, default=10259, help="port for /metrics, /healthz")
    parser.add_argument("--log-level", default="info")
    parser.add_argument("--log-json", action="store_true", help="JSON lines on stderr")
    parser.add_argument(
        "--bind-grace-seconds",
        type=float,
        default=30.0,
        help="on SIGTERM, how long in-flight binds may take before they are rolled back",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging(args.log_level, args.log_json)
    try:
        config = load_config(args.config)
        resolve(config, build_registry())
    except ConfigError as error:
        problems = "\n".join(f"  {problem}" for problem in error.problems)
        where = args.config or "(built-in defaults)"
        print(f"pyscheduler: invalid configuration {where}:\n{problems}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        return asyncio.run(_run(config, args))
    except ConnectionConfigError as error:
        print(f"pyscheduler: cannot reach the cluster: {error}", file=sys.stderr)
        return EXIT_CONFIG


async def _run(config: SchedulerConfiguration, args: argparse.Namespace) -> int:
    connection = config.client_connection
    client = await KubeClient.connect(
        kubeconfig=args.kubeconfig or connection.kubeconfig or None,
        qps=connection.qps,
        burst=connection.burst,
        user_agent=USER_AGENT,
    )
    options = AppOptions(
        bind_address=args.bind_address,
        port=args.port,
        bind_grace_seconds=args.bind_grace_seconds,
    )
    try:
        app = SchedulerApp(config, client, options)
    except BaseException:
        await client.close()
        raise
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, app.stop)
    loop.add_signal_handler(signal.SIGUSR2, app.request_cache_report)
    try:
        await app.run()
    except ExceptionGroup as group:
        missing = group.subgroup(ResourceNotServed)
        if missing is not None:
            for error in _leaves(missing):
                log.error("cannot start: %s", error)
            return EXIT_RESOURCE_NOT_SERVED
        if group.subgroup(LeadershipLost) is None:
            raise
        log.error("lost leadership; exiting")
        return EXIT_LOST_LEADERSHIP
    return 0


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    leaves: list[BaseException] = []
    for error in group.exceptions:
        if isinstance(error, BaseExceptionGroup):
            leaves.extend(_leaves(error))
        else:
            leaves.append(error)
    return leaves


if __name__ == "__main__":
    sys.exit(main())
