"""kube-scheduler v1.36's command-line flags, every one of them.

``parse_args`` reads upstream's flag names in upstream's sections (misc, secure
serving, authentication, authorization, deprecated, leader election, feature
gate, logs) plus ours (``--bind-grace-seconds``, ``--max-concurrent-binds``,
``--adaptive-concurrent-binds``, ``--seed``, ``--ops-header-timeout-seconds``,
``--ops-max-connections``). A flag either works with upstream's meaning or,
where it cannot apply, is accepted and reported in ``args.notes`` with its
reason (``NO_OP_FLAGS``), which the CLI logs once at start; removed
``--lock-object-*`` flags are read as their successors. Go's flag syntax is
accepted where it differs from argparse's (``-v=4``, ``--leader-elect=false``)
and, as in Go, no flag may be abbreviated.

``apply_flags`` merges the flags that override the configuration file into it
as upstream does (``ApplyLeaderElectionTo``: a ``--leader-elect*`` flag given
on the command line wins over the file; ``ApplyDeprecated``: ``--kube-api-*``
and ``--profiling`` only without ``--config``) and re-validates the result, so
the configuration in force (served at ``/configz``) is the one checked. Unlike
upstream, where ``--kubeconfig`` is ignored when ``--config`` is given,
``--kubeconfig`` always wins over ``clientConnection.kubeconfig``: nothing given
is silently dropped.
"""

from __future__ import annotations

import argparse
import logging
import ssl
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from scheduler.ops.defaults import HEADER_TIMEOUT_SECONDS, MAX_CONNECTIONS

if TYPE_CHECKING:
    from scheduler.config import SchedulerConfiguration

# ruff: noqa: PLC0415 - the configuration, the feature gates, durations and
# TLS are imported where a flag's value needs them, never at import:
# `pyscheduler --help` loads this module and the CLI's only
# (tests/unit/test_cli_help_imports.py).

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


def parse_duration_flag(text: str) -> float:
    from scheduler.framework.durations import parse_duration

    try:
        return parse_duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _normalise(argv: Sequence[str]) -> list[str]:
    """Go's ``-v=4`` spelled for argparse (``--v=4``)."""
    return ["--v=" + arg[3:] if arg.startswith("-v=") else arg for arg in argv]


# Flags of kube-scheduler v1.36 that cannot apply here: accepted, logged once
# at start with the reason when given (``notes``), documented in the README.
# flag -> (metavar, reason). A metavar of None marks a boolean flag.
NO_OP_FLAGS: dict[str, tuple[str | None, str]] = {
    "cert-dir": ("DIR", "the self-signed serving pair is made at start and kept in memory"),
    "disable-http2-serving": (None, "the ops port serves HTTP/1.1 only"),
    "http2-max-streams-per-connection": ("N", "the ops port serves HTTP/1.1 only"),
    "permit-address-sharing": (None, "the ops port binds without SO_REUSEADDR sharing"),
    "permit-port-sharing": (None, "the ops port binds without SO_REUSEPORT sharing"),
    "tls-curve-preferences": ("IDS", "Python's ssl module picks the key-exchange groups"),
    "tls-sni-cert-key": ("PAIR", "one serving pair (--tls-cert-file) for every name"),
    "authentication-skip-lookup": (
        None,
        "client certificates and front-proxy headers are never read",
    ),
    "authentication-token-webhook-cache-ttl": (
        "DURATION",
        "TokenReviews are single-flight, not cached",
    ),
    "authentication-tolerate-lookup-failure": (
        None,
        "client certificates and front-proxy headers are never read",
    ),
    "client-ca-file": ("FILE", "client certificates are not credentials here; send a bearer token"),
    "requestheader-allowed-names": ("NAMES", "front-proxy headers are never trusted"),
    "requestheader-client-ca-file": ("FILE", "front-proxy headers are never trusted"),
    "requestheader-extra-headers-prefix": ("PREFIXES", "front-proxy headers are never trusted"),
    "requestheader-group-headers": ("HEADERS", "front-proxy headers are never trusted"),
    "requestheader-uid-headers": ("HEADERS", "front-proxy headers are never trusted"),
    "requestheader-username-headers": ("HEADERS", "front-proxy headers are never trusted"),
    "authorization-webhook-cache-authorized-ttl": (
        "DURATION",
        "SubjectAccessReviews are single-flight, not cached",
    ),
    "authorization-webhook-cache-unauthorized-ttl": (
        "DURATION",
        "SubjectAccessReviews are single-flight, not cached",
    ),
    "allow-metric-labels": ("MAP", "metric label allow-lists are not implemented"),
    "allow-metric-labels-manifest": ("FILE", "metric label allow-lists are not implemented"),
    # Validated as upstream (hidden_metrics_version_error): only the previous minor.
    "show-hidden-metrics-for-version": ("VERSION", "no metric of ours is hidden"),
    "log-flush-frequency": ("DURATION", "each log line is written at once"),
    "log-json-info-buffer-size": ("QUANTITY", "log lines are not buffered"),
    "log-json-split-stream": (None, "every log line goes to stderr"),
    "log-text-info-buffer-size": ("QUANTITY", "log lines are not buffered"),
    "log-text-split-stream": (None, "every log line goes to stderr"),
    "vmodule": ("PATTERN=N", "verbosity is per process (-v)"),
}
# Flags upstream removed, still found in older hardening guides: accepted with
# a deprecation note and mapped to their successors.
RENAMED_FLAGS = {
    "lock-object-name": "leader-elect-resource-name",
    "lock-object-namespace": "leader-elect-resource-namespace",
}
# Deprecated upstream flags that set configuration fields, honoured only
# without --config, as upstream (``ApplyDeprecated``).
_DEPRECATED_CONFIG_FLAGS = {
    "profiling": ("enableProfiling",),
    "contention_profiling": ("enableContentionProfiling",),
    "kube_api_qps": ("clientConnection", "qps"),
    "kube_api_burst": ("clientConnection", "burst"),
    "kube_api_content_type": ("clientConnection", "contentType"),
}
SUPPORTED_VERSION = "1.36"
TLS_VERSIONS = {
    "VersionTLS10": ssl.TLSVersion.TLSv1,
    "VersionTLS11": ssl.TLSVersion.TLSv1_1,
    "VersionTLS12": ssl.TLSVersion.TLSv1_2,
    "VersionTLS13": ssl.TLSVersion.TLSv1_3,
}


def _version(text: str) -> str:
    value = text.strip().removeprefix("kube=").removeprefix("v")
    if ".".join(value.split(".")[:2]) != SUPPORTED_VERSION:
        raise argparse.ArgumentTypeError(
            f"{text!r}: pyscheduler implements Kubernetes {SUPPORTED_VERSION} only"
        )
    return value


def hidden_metrics_version_error(value: str | None) -> str | None:
    """Upstream's check of --show-hidden-metrics-for-version
    (component-base's ``validateShowHiddenMetricsVersion``): empty or the
    previous minor version, spelled ``MAJOR.MINOR``, nothing else."""
    if not value:
        return None
    major, minor = SUPPORTED_VERSION.split(".")
    previous = f"{major}.{int(minor) - 1}"
    if value == previous:
        return None
    return (
        f"--show-hidden-metrics-for-version must be omitted or have the value '{previous}'. "
        "Only the previous minor version is allowed"
    )


def _tls_version(text: str) -> ssl.TLSVersion:
    if text not in TLS_VERSIONS:
        raise argparse.ArgumentTypeError(
            f"unexpected TLS version {text!r} (must be one of: {', '.join(TLS_VERSIONS)})"
        )
    return TLS_VERSIONS[text]


def _cipher_suites(text: str) -> tuple[str, ...]:
    from scheduler.ops.tls import openssl_cipher_list

    names = tuple(part.strip() for part in text.split(",") if part.strip())
    try:
        openssl_cipher_list(names)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return names


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def build_parser(description: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pyscheduler",
        description=description,
        allow_abbrev=False,  # Go's flag package takes no abbreviations
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Flags marked (no effect) are kube-scheduler's, accepted so that an existing "
        "argument list starts; each one given is logged at start with the reason.",
    )
    misc = parser.add_argument_group("misc")
    misc.add_argument(
        "--config",
        help="the path to the configuration file (KubeSchedulerConfiguration, YAML or JSON)",
    )
    misc.add_argument(
        "--write-config-to",
        metavar="FILE",
        help="write the configuration in force (file, flags and defaults) to FILE and exit",
    )
    misc.add_argument(
        "--master",
        metavar="URL",
        help="the address of the Kubernetes API server (overrides any value in kubeconfig)",
    )
    misc.add_argument(
        "--version",
        action="store_true",
        help="print the version (and the git revision when known) and exit",
    )
    serving = parser.add_argument_group("secure serving")
    serving.add_argument(
        "--secure-port",
        type=_port,
        default=DEFAULT_SECURE_PORT,
        help="HTTPS port for /metrics, /healthz, /readyz, /livez, /configz, /debug "
        "(0 picks a free one)",
    )
    serving.add_argument("--bind-address", default="0.0.0.0", help="the IP address to listen on")
    serving.add_argument(
        "--tls-cert-file",
        help="x509 serving certificate (default: a self-signed one made at start)",
    )
    serving.add_argument("--tls-private-key-file", help="the private key of --tls-cert-file")
    serving.add_argument(
        "--tls-min-version",
        type=_tls_version,
        default=ssl.TLSVersion.TLSv1_2,
        metavar="VERSION",
        help="minimum TLS version: VersionTLS10, VersionTLS11, VersionTLS12 (default), "
        "VersionTLS13",
    )
    serving.add_argument(
        "--tls-cipher-suites",
        type=_cipher_suites,
        default=(),
        metavar="NAMES",
        help="comma-separated TLS 1.2 cipher suites by their IANA/Go names "
        "(TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,...); TLS 1.3 suites are always those of OpenSSL",
    )
    serving.add_argument(
        "--ops-header-timeout-seconds",
        type=float,
        default=HEADER_TIMEOUT_SECONDS,
        help="(ours) close an ops-port connection whose request header is not read in time",
    )
    serving.add_argument(
        "--ops-max-connections",
        type=int,
        default=MAX_CONNECTIONS,
        help="(ours) open ops-port connections at most; more are closed at once",
    )
    authn = parser.add_argument_group("authentication")
    authn.add_argument(
        "--authentication-kubeconfig",
        help="kubeconfig for TokenReview (default: the scheduler's credentials, own client)",
    )
    authz = parser.add_argument_group("authorization")
    authz.add_argument(
        "--authorization-kubeconfig",
        help="kubeconfig for SubjectAccessReview (default: the scheduler's credentials, "
        "own client)",
    )
    authz.add_argument(
        "--authorization-always-allow-paths",
        type=_paths,
        default=DEFAULT_ALWAYS_ALLOW_PATHS,
        help="comma-separated paths served without authorization (exact match)",
    )
    deprecated = parser.add_argument_group(
        "deprecated (as upstream: ignored when --config is given, except --kubeconfig)"
    )
    deprecated.add_argument(
        "--kubeconfig", help="kubeconfig file; wins over clientConnection.kubeconfig"
    )
    for flag, kind, meaning in (
        ("profiling", _go_bool, "enableProfiling (no /debug/pprof here: no effect)"),
        ("contention-profiling", _go_bool, "enableContentionProfiling (no effect)"),
    ):
        deprecated.add_argument(
            f"--{flag}",
            type=kind,
            nargs="?",
            const=True,
            default=None,
            metavar="BOOL",
            help=meaning,
        )
    deprecated.add_argument("--kube-api-qps", type=float, default=None, help="clientConnection.qps")
    deprecated.add_argument(
        "--kube-api-burst", type=int, default=None, help="clientConnection.burst"
    )
    deprecated.add_argument(
        "--kube-api-content-type", default=None, help="clientConnection.contentType"
    )
    deprecated.add_argument(
        "--pod-max-in-unschedulable-pods-duration",
        type=parse_duration_flag,
        default=None,
        metavar="DURATION",
        help="the longest a pod stays unschedulable before it is retried (default 5m0s)",
    )
    election = parser.add_argument_group(
        "leader election (each flag given wins over the configuration file)"
    )
    election.add_argument(
        "--leader-elect", type=_go_bool, nargs="?", const=True, default=None, metavar="BOOL"
    )
    for suffix in _LEADER_ELECTION_FLAGS:
        election.add_argument(f"--leader-elect-{suffix.replace('_', '-')}", default=None)
    for old, new in RENAMED_FLAGS.items():
        election.add_argument(
            f"--{old}",
            dest=new.replace("-", "_"),
            default=None,
            help=f"removed upstream: use --{new}",
        )
    gates = parser.add_argument_group("feature gate")
    gates.add_argument(
        "--feature-gates",
        action="append",
        default=[],
        metavar="Name=bool,...",
        help="kube-scheduler v1.36's gates (kube: prefix allowed, repeatable); a scheduler "
        "gate whose other position pyscheduler lacks is refused away from its default",
    )
    for flag in ("emulated-version", "min-compatibility-version"):
        gates.add_argument(
            f"--{flag}", type=_version, default=None, metavar="VERSION", help="1.36 only"
        )
    logs = parser.add_argument_group("logs")
    logs.add_argument(
        "-v",
        "--v",
        type=int,
        default=0,
        metavar="N",
        help=f"verbosity; debug from {DEBUG_VERBOSITY}",
    )
    logs.add_argument("--logging-format", choices=LOGGING_FORMATS, default="text")
    metrics = parser.add_argument_group("metrics")
    metrics.add_argument(
        "--disabled-metrics",
        type=_names,
        action="extend",
        default=[],
        metavar="NAMES",
        help="comma-separated metric names left out of /metrics (e.g. "
        "scheduler_plugin_execution_duration_seconds), as upstream's escape hatch",
    )
    ours = parser.add_argument_group("pyscheduler")
    ours.add_argument(
        "--bind-grace-seconds",
        type=float,
        default=30.0,
        help="on SIGTERM, how long in-flight binds may take before they are rolled back",
    )
    ours.add_argument(
        "--max-concurrent-binds",
        type=_non_negative_int,
        # scheduler.cycle.concurrency.DEFAULT_MAX_CONCURRENT_BINDS (not imported here)
        default=16,
        metavar="N",
        help="at most N binding cycles writing at once (0: no limit): the loop pops the next "
        "pod only below the limit (adaptive: following the bind latency up to N); pods waiting at "
        "Permit, or in PreBind for over a second, never count, so the limit cannot hold up "
        "scheduling for long",
    )
    ours.add_argument(
        "--adaptive-concurrent-binds",
        type=_go_bool,
        nargs="?",
        const=True,
        default=False,
        metavar="BOOL",
        help="let the limit of binding cycles writing at once follow the bind latency (from "
        "16, between 4 and --max-concurrent-binds, e.g. 64); off by default: pinned at "
        "--max-concurrent-binds",
    )
    ours.add_argument(
        "--seed",
        type=int,
        default=None,
        metavar="N",
        help="seed the scheduling loop's and the plugins' random draws (ties among equal "
        "scores, sampling), as simulate --seed, to replay a decision; default: unseeded",
    )
    noop = parser.add_argument_group("kube-scheduler flags without effect here")
    for flag, (metavar, reason) in NO_OP_FLAGS.items():
        dest = "noop_" + flag.replace("-", "_")
        if metavar is None:
            noop.add_argument(
                f"--{flag}", dest=dest, type=_go_bool, nargs="?", const=True, default=None,
                metavar="BOOL", help=f"(no effect) {reason}",
            )  # fmt: skip
        else:
            noop.add_argument(
                f"--{flag}", dest=dest, default=None, metavar=metavar, help=f"(no effect) {reason}"
            )
    return parser


def parse_args(argv: Sequence[str] | None, description: str | None = None) -> argparse.Namespace:
    parser = build_parser(description)
    args = parser.parse_args(_normalise(sys.argv[1:] if argv is None else argv))
    if bool(args.tls_cert_file) != bool(args.tls_private_key_file):
        parser.error("--tls-cert-file and --tls-private-key-file go together")
    from scheduler.app.gateflags import FeatureGateError, parse_feature_gates

    try:
        args.feature_gates = parse_feature_gates(",".join(args.feature_gates))
    except FeatureGateError as error:
        parser.error(f"argument --feature-gates: {error}")
    hidden = hidden_metrics_version_error(args.noop_show_hidden_metrics_for_version)
    if hidden:
        parser.error(hidden)
    args.notes = _notes(args, argv if argv is not None else sys.argv[1:])
    return args


def _notes(args: argparse.Namespace, argv: Sequence[str]) -> list[str]:
    """One line per accepted flag that does not do what upstream's does."""
    notes = [
        f"--{flag} has no effect here: {reason}"
        for flag, (_metavar, reason) in NO_OP_FLAGS.items()
        if getattr(args, "noop_" + flag.replace("-", "_")) is not None
    ]
    for old, new in RENAMED_FLAGS.items():
        if any(arg == f"--{old}" or arg.startswith(f"--{old}=") for arg in argv):
            notes.append(f"--{old} was removed from kube-scheduler; read as --{new}")
    if args.config:
        ignored = [
            "--" + name.replace("_", "-")
            for name in _DEPRECATED_CONFIG_FLAGS
            if getattr(args, name) is not None
        ]
        if ignored:
            notes.append(f"{', '.join(ignored)} ignored: --config is given (as upstream)")
    return notes


def log_level(verbosity: int) -> str:
    return logging.getLevelName(logging.DEBUG if verbosity >= DEBUG_VERBOSITY else logging.INFO)


def apply_flags(config: SchedulerConfiguration, args: argparse.Namespace) -> SchedulerConfiguration:
    """The configuration in force: the file's, overridden by the flags given."""
    from pydantic import ValidationError

    from scheduler.config import ConfigError, SchedulerConfiguration
    from scheduler.config.errors import problems_from

    data: dict[str, Any] = config.model_dump(mode="json", by_alias=True, exclude_none=True)
    changed = False
    if args.kubeconfig:
        data["clientConnection"]["kubeconfig"] = args.kubeconfig
        changed = True
    if not args.config:
        for name, path in _DEPRECATED_CONFIG_FLAGS.items():
            value = getattr(args, name)
            if value is not None:
                target = data
                for key in path[:-1]:
                    target = target[key]
                target[path[-1]] = value
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
