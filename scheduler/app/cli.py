"""Command line: ``pyscheduler --config FILE [--kubeconfig FILE] ...`` with
kube-scheduler's flag names (see ``scheduler.app.flags``), or ``pyscheduler
simulate ...`` (``scheduler.simulate.cli``).

Loads and validates the configuration first, merged with the flags that
override it: a bad file or flag stops start-up with a message naming the field
and the problem (exit code 2), before any connection is made. SIGTERM and
SIGINT stop it in order; SIGUSR2 logs the cache comparer's report
(``scheduler.ops.cachedebug``). Runs against ``--kubeconfig``, the config's
``clientConnection.kubeconfig``, or the in-cluster service account.
A resource type the API server does not serve (a CRD a plugin needs, not
installed) stops start-up with one error line naming it (exit code 3).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from scheduler.app.flags import log_level, parse_args

if TYPE_CHECKING:
    from scheduler.config import SchedulerConfiguration

# ruff: noqa: PLC0415 - everything past the flags (configuration, engine,
# plugins, client) is imported inside the functions that use it, so `--help`
# loads none of it (tests/unit/test_cli_help_imports.py).

log = logging.getLogger("pyscheduler")
USER_AGENT = "pyscheduler"
# Exit codes (README, "Run the scheduler"): 0 stopped by a signal or after
# --version/--write-config-to; 1 leadership lost; 2 invalid configuration or
# flags; 3 an API resource a plugin needs is not served; 4 no usable cluster
# configuration (kubeconfig missing or unreadable, not in a cluster).
EXIT_LOST_LEADERSHIP = 1
EXIT_CONFIG = 2
EXIT_RESOURCE_NOT_SERVED = 3
EXIT_NO_CLUSTER = 4


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["simulate"]:
        from scheduler.simulate.cli import main as simulate_main

        return simulate_main(arguments[1:])
    args = parse_args(arguments, __doc__)
    if args.version:
        from scheduler.app.buildinfo import version_line

        print(version_line())
        return 0
    from scheduler.ops.gcpolicy import pause_for_startup

    pause_for_startup()  # until the informers synced (SchedulerApp.run)
    import asyncio

    from scheduler.app.flags import apply_flags
    from scheduler.config import ConfigError, advice, load_config
    from scheduler.config.effective import effective_yaml
    from scheduler.engine.assembly import build_registry, resolve
    from scheduler.kube.connection import ConfigError as ConnectionConfigError
    from scheduler.ops.logsetup import configure_logging

    configure_logging(log_level(args.v), args.logging_format == "json")
    try:
        config = apply_flags(load_config(args.config), args)
        profiles = resolve(config, build_registry(), args.feature_gates)
    except ConfigError as error:
        problems = "\n".join(f"  {problem}" for problem in error.problems)
        where = args.config or "(built-in defaults)"
        print(f"pyscheduler: invalid configuration {where}:\n{problems}", file=sys.stderr)
        return EXIT_CONFIG
    if args.write_config_to:
        return _write_config(args.write_config_to, effective_yaml(config, profiles))
    for note in (*args.notes, *advice.notes(config)):
        log.info("%s", note)
    for warning in advice.warnings(config):
        log.warning("%s", warning)
    try:
        return asyncio.run(_run(config, args))
    except ConnectionConfigError as error:
        print(f"pyscheduler: no usable cluster configuration: {error}", file=sys.stderr)
        return EXIT_NO_CLUSTER


def _write_config(path: str, text: str) -> int:
    """kube-scheduler's --write-config-to: the configuration in force, then exit."""
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as error:
        print(f"pyscheduler: --write-config-to {path}: {error.strerror}", file=sys.stderr)
        return EXIT_CONFIG
    log.info("wrote the configuration in force to %s", path)
    return 0


async def _run(config: SchedulerConfiguration, args: argparse.Namespace) -> int:
    import asyncio
    import random
    import signal

    from scheduler.app.root import AppOptions, SchedulerApp
    from scheduler.config import PROTOBUF_CONTENT_TYPE
    from scheduler.cycle.concurrency import BindConcurrency
    from scheduler.informers import ResourceNotServed
    from scheduler.kube.client import KubeClient
    from scheduler.leaderelection import LeadershipLost
    from scheduler.ops.connlimits import Limits

    connection = config.client_connection
    client = await KubeClient.connect(
        kubeconfig=connection.kubeconfig or None,
        master=args.master,
        qps=connection.qps,
        burst=connection.burst,
        user_agent=USER_AGENT,
        protobuf_writes=connection.content_type == PROTOBUF_CONTENT_TYPE,
    )
    options = AppOptions(
        bind_address=args.bind_address,
        port=args.secure_port,
        bind_grace_seconds=args.bind_grace_seconds,
        binds=BindConcurrency(args.max_concurrent_binds, adaptive=args.adaptive_concurrent_binds),
        feature_gates=args.feature_gates,
        tls_cert_file=args.tls_cert_file,
        tls_private_key_file=args.tls_private_key_file,
        tls_min_version=args.tls_min_version,
        tls_cipher_suites=args.tls_cipher_suites,
        disabled_metrics=frozenset(args.disabled_metrics),
        always_allow_paths=args.authorization_always_allow_paths,
        ops_limits=Limits(
            header_timeout=args.ops_header_timeout_seconds,
            max_connections=args.ops_max_connections,
        ),
        **(
            {}
            if args.pod_max_in_unschedulable_pods_duration is None
            else {"max_in_unschedulable_seconds": args.pod_max_in_unschedulable_pods_duration}
        ),
    )
    # Reviews go through these, else through a client of the app's own
    # (same credentials, separate pool and limiter; see SchedulerApp).
    extra: list[KubeClient] = []

    async def delegate(kubeconfig: str | None) -> KubeClient | None:
        if not kubeconfig:
            return None
        extra.append(
            await KubeClient.connect(
                kubeconfig=kubeconfig,
                qps=connection.qps,
                burst=connection.burst,
                user_agent=USER_AGENT,
            )
        )
        return extra[-1]

    try:
        authn = await delegate(args.authentication_kubeconfig)
        authz = await delegate(args.authorization_kubeconfig)
        app = SchedulerApp(
            config,
            client,
            options,
            rng=None if args.seed is None else random.Random(args.seed),
            authn_client=authn,
            authz_client=authz,
        )
    except BaseException:
        for each in (client, *extra):
            await each.close()
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
    finally:
        for each in extra:
            await each.close()
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
