"""kube-scheduler's command-line flags, for what pyscheduler supports.

``parse_args`` reads the upstream flag names (``--config``, ``--kubeconfig``,
``--secure-port``, ``--bind-address``, ``--authentication-kubeconfig``,
``--authorization-kubeconfig``, ``--authorization-always-allow-paths``,
``--tls-cert-file``, ``--tls-private-key-file``, ``-v``/``--v``,
``--logging-format``, ``--leader-elect*``, ``--feature-gates``) plus our
``--ops-header-timeout-seconds``, ``--ops-max-connections``,
``--bind-grace-seconds``, ``--max-concurrent-binds`` and ``--seed``. Go's flag
syntax is accepted where it differs from argparse's: ``-v=4``,
``--leader-elect=false``, ``--flag value``.

``apply_flags`` merges the flags that override the configuration file into it
as upstream does (``ApplyLeaderElectionTo``: a ``--leader-elect*`` flag given
on the command line wins over the file) and re-validates the result, so the
configuration in force (served at ``/configz``) is the one checked. Unlike
upstream, where ``--kubeconfig`` is ignored when ``--config`` is given,
``--kubeconfig`` always wins over ``clientConnection.kubeconfig``: nothing given
is silently dropped.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from scheduler.config import ConfigError, SchedulerConfiguration
from scheduler.config.errors import problems_from
from scheduler.connlimits import HEADER_TIMEOUT_SECONDS, MAX_CONNECTIONS
from scheduler.features import FeatureGateError, FeatureGates, parse_feature_gates

DEFAULT_SECURE_PORT = 10259
DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
LOGGING_FORMATS = ("text", "json")
# klog verbosity at which our debug logging starts (upstream logs per-pod
# scheduling decisions from -v=4 on).
DEBUG_VERBOSITY = 4

# --leader-elect-<suffix> -> leaderElection.<field>
_LEADER_ELECTION_FLAGS = {
    "lease_duration": "leaseDuration",
    "renew_deadline": "renewDeadline",
    "retry_period": "retryPeriod",
    "resource_lock": "resourceLock",
    "resource_name": "resourceName",
    "resource_namespace": "resourceNamespace",
}


def _go_bool(text: str) -> bool:
    value = text.strip().lower()
    if value in {"true", "1", "t"}:
        return True
    if value in {"false", "0", "f"}:
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {text!r}: expected true or false")


def _paths(text: str) -> tuple[str, ...]:
    paths = tuple(part.strip() for part in text.split(",") if part.strip())
    for path in paths:
        if not path.startswith("/"):
            raise argparse.ArgumentTypeError(f"path {path!r} must start with '/'")
    return paths


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} must be in 0..65535 (0 picks a free one)")
    return port


def _gates(text: str) -> FeatureGates:
    try:
        return parse_feature_gates(text)
    except FeatureGateError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _normalise(argv: Sequence[str]) -> list[str]:
    """Go's ``-v=4`` and ``-v 4`` spelled for argparse (``--v``)."""
    out: list[str] = []
    for arg in argv:
        if arg == "-v":
            out.append("--v")
        elif arg.startswith("-v="):
            out.append("--v=" + arg[3:])
        else:
            out.append(arg)
    return out


def build_parser(description: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pyscheduler", description=description)
    add = parser.add_argument
    add("--config", help="KubeSchedulerConfiguration file (YAML or JSON)")
    add(
        "--version",
        action="store_true",
        help="print the version (and the git revision when known) and exit",
    )
    add("--kubeconfig", help="kubeconfig file; wins over clientConnection.kubeconfig")
    serving = parser.add_argument_group("secure serving")
    serving.add_argument(
        "--secure-port",
        type=_port,
        default=DEFAULT_SECURE_PORT,
        help="HTTPS port for /metrics, /healthz, /readyz, /livez, /configz, /debug",
    )
    serving.add_argument("--bind-address", default="0.0.0.0", help="address to listen on")
    serving.add_argument("--tls-cert-file", help="x509 certificate (a self-signed one if unset)")
    serving.add_argument("--tls-private-key-file", help="private key of --tls-cert-file")
    auth = parser.add_argument_group("authentication and authorization")
    auth.add_argument(
        "--authentication-kubeconfig",
        help="kubeconfig for TokenReview (default: own client, same credentials)",
    )
    auth.add_argument(
        "--authorization-kubeconfig",
        help="kubeconfig for SubjectAccessReview (default: own client, same credentials)",
    )
    auth.add_argument(
        "--authorization-always-allow-paths",
        type=_paths,
        default=DEFAULT_ALWAYS_ALLOW_PATHS,
        help="comma-separated paths served without authorization (exact match)",
    )
    auth.add_argument(
        "--ops-header-timeout-seconds",
        type=float,
        default=HEADER_TIMEOUT_SECONDS,
        help="close an ops-port connection whose request header is not read in time",
    )
    auth.add_argument(
        "--ops-max-connections",
        type=int,
        default=MAX_CONNECTIONS,
        help="open ops-port connections at most; more are closed at once",
    )
    logs = parser.add_argument_group("logging")
    logs.add_argument(
        "--v", type=int, default=0, metavar="N", help=f"verbosity; debug from {DEBUG_VERBOSITY}"
    )
    logs.add_argument("--logging-format", choices=LOGGING_FORMATS, default="text")
    election = parser.add_argument_group(
        "leader election (each flag given wins over the configuration file)"
    )
    election.add_argument(
        "--leader-elect", type=_go_bool, nargs="?", const=True, default=None, metavar="BOOL"
    )
    for suffix in _LEADER_ELECTION_FLAGS:
        election.add_argument(f"--leader-elect-{suffix.replace('_', '-')}", default=None)
    parser.add_argument(
        "--feature-gates",
        type=_gates,
        default=FeatureGates(),
        metavar="Name=bool,...",
        help="feature gates read by the plugins and the engine",
    )
    parser.add_argument(
        "--bind-grace-seconds",
        type=float,
        default=30.0,
        help="on SIGTERM, how long in-flight binds may take before they are rolled back",
    )
    parser.add_argument(
        "--max-concurrent-binds",
        type=_non_negative_int,
        default=64,
        metavar="N",
        help="at most N Bind requests in flight at once (0: no limit); pods waiting at Permit "
        "or in PreBind never count, so the limit cannot hold up scheduling",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        metavar="N",
        help="seed the scheduling loop's and the plugins' random draws (ties among equal "
        "scores, sampling), as simulate --seed, to replay a decision; default: unseeded",
    )
    return parser


def parse_args(argv: Sequence[str] | None, description: str | None = None) -> argparse.Namespace:
    args = build_parser(description).parse_args(_normalise(sys.argv[1:] if argv is None else argv))
    if bool(args.tls_cert_file) != bool(args.tls_private_key_file):
        build_parser().error("--tls-cert-file and --tls-private-key-file go together")
    return args


def log_level(verbosity: int) -> str:
    return logging.getLevelName(logging.DEBUG if verbosity >= DEBUG_VERBOSITY else logging.INFO)


def apply_flags(config: SchedulerConfiguration, args: argparse.Namespace) -> SchedulerConfiguration:
    """The configuration in force: the file's, overridden by the flags given."""
    data: dict[str, Any] = config.model_dump(mode="json", by_alias=True, exclude_none=True)
    changed = False
    if args.kubeconfig:
        data["clientConnection"]["kubeconfig"] = args.kubeconfig
        changed = True
    election = data["leaderElection"]
    if args.leader_elect is not None:
        election["leaderElect"] = args.leader_elect
        changed = True
    for suffix, key in _LEADER_ELECTION_FLAGS.items():
        value = getattr(args, f"leader_elect_{suffix}")
        if value is not None:
            election[key] = value
            changed = True
    if not changed:
        return config
    try:
        return SchedulerConfiguration.model_validate(data)
    except ValidationError as error:
        raise ConfigError(list(problems_from(error)), "the command-line flags") from None


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value
