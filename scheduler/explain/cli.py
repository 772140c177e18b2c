"""``kubectl-pyscheduler``: the kubectl plugin (``kubectl pyscheduler ...``).

    kubectl pyscheduler explain [-n NAMESPACE] POD | NAMESPACE/POD
        [--url URL | --port PORT | --service NS/NAME[:PORT]]
        [--kubeconfig FILE] [--context NAME] [--token TOKEN]
        [--insecure-skip-tls-verify] [-o text|json]
    kubectl pyscheduler explain --snapshot FILE... [--config FILE] [--seed N] NAMESPACE/POD

Live: the running scheduler's last attempt for the pod. ``--snapshot``: the
same record from a simulated run of the snapshot (``pyscheduler simulate``),
with every Filter plugin's verdict on every node added.
Exit codes: 0 shown, 1 no diagnosis (unreachable, refused, no attempt), 2 bad input.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from typing import TextIO

from scheduler.explain.diagnosis import Diagnosis, Verdict, from_attempts, render
from scheduler.explain.fetch import (
    FetchError,
    Identity,
    context_namespace,
    debug_path,
    get_json,
    load_identity,
    service_proxy_url,
)
from scheduler.framework.objects import parse_pod
from scheduler.kube.resources import PODS

PROG = "kubectl pyscheduler"
EXIT_UNAVAILABLE = 1
EXIT_INPUT = 2


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="pyscheduler's kubectl plugin")
    commands = p.add_subparsers(dest="command", required=True)
    explain = commands.add_parser("explain", help="why a pod is pending, node by node")
    explain.add_argument("pod", metavar="POD", help="POD or NAMESPACE/POD")
    explain.add_argument(
        "-n",
        "--namespace",
        help="the pod's namespace (default: the kubeconfig context's, else default)",
    )
    where = explain.add_mutually_exclusive_group()
    where.add_argument("--url", help="the scheduler's ops endpoint, e.g. https://host:10259")
    where.add_argument("--port", type=int, help="the ops port on 127.0.0.1 (https)")
    where.add_argument(
        "--service",
        metavar="NS/NAME[:PORT]",
        help="reach the scheduler's Service through the API server's proxy",
    )
    where.add_argument("--snapshot", nargs="+", metavar="FILE", help="explain from a snapshot")
    explain.add_argument("--kubeconfig", help="kubeconfig (default $KUBECONFIG, ~/.kube/config)")
    explain.add_argument("--context", help="kubeconfig context (default: the current one)")
    explain.add_argument("--token", help="bearer token (default: the kubeconfig user's)")
    explain.add_argument(
        "--insecure-skip-tls-verify",
        action="store_true",
        help="do not verify the ops endpoint's certificate",
    )
    explain.add_argument("--config", help="with --snapshot: KubeSchedulerConfiguration")
    explain.add_argument("--seed", type=int, default=0, help="with --snapshot: tie-break seed")
    explain.add_argument("-o", "--output", choices=("text", "json"), default="text")
    return p


class InputError(Exception):
    pass


def split_pod(
    value: str, namespace: str | None = None, default: str = "default"
) -> tuple[str, str]:
    """``NAMESPACE/POD``, or ``POD`` in ``namespace`` (``-n``), else ``default``."""
    given, slash, name = value.partition("/")
    if not slash:
        given, name = namespace or default, given
    elif namespace is not None and namespace != given:
        raise InputError(f"{value}: the namespace differs from -n {namespace}")
    if not given or not name or "/" in name:
        raise InputError(f"{value}: expected POD or NAMESPACE/POD")
    return given, name


def live(args: argparse.Namespace, namespace: str, name: str) -> Diagnosis:
    path = debug_path(namespace, name)
    needs_kubeconfig = args.service is not None or args.token is None
    identity = load_identity(args.kubeconfig, args.context) if needs_kubeconfig else Identity()
    if args.token is not None:
        identity = dataclasses.replace(identity, token=args.token)
    if args.service:
        url = service_proxy_url(identity.server, args.service, path)
        verify = True
    else:
        base = args.url or (f"https://127.0.0.1:{args.port}" if args.port else None)
        if base is None:
            raise InputError("say where the scheduler is: --url, --port, --service or --snapshot")
        url = base.rstrip("/") + path
        verify = not args.insecure_skip_tls_verify
        identity = dataclasses.replace(identity, ca_data=b"") if not verify else identity
    body = get_json(url, identity, verify=verify)
    return from_attempts(f"{namespace}/{name}", body.get("attempts") or [])


def offline(args: argparse.Namespace, namespace: str, name: str) -> Diagnosis:
    # Loaded only here: the engine and every plugin take seconds to import,
    # which the live path (one HTTP GET) should not pay.
    from scheduler.simulate import cli as simulate_cli  # noqa: PLC0415
    from scheduler.simulate.verdicts import filter_matrix, node_shortfalls  # noqa: PLC0415

    try:
        config, snapshot = simulate_cli.prepare(
            argparse.Namespace(
                config=args.config,
                snapshot=args.snapshot,
                pods=[],
                remove_node=[],
                cordon=[],
                add_nodes=[],
            )
        )
        with simulate_cli.one_line_logging():
            outcome, _, _ = simulate_cli.simulate(config, snapshot, seed=args.seed)
    except simulate_cli.InputError as error:
        raise InputError(str(error)) from None
    key = f"{namespace}/{name}"
    diagnosis = from_attempts(key, outcome.attempts.attempts(namespace, name) or [])
    raw = outcome.cluster.get(PODS, key)
    if raw is None:
        raise InputError(f"{key}: no such pod in the snapshot")
    pod = parse_pod(raw)
    if not pod.node_name and pod.scheduler_name in outcome.engine.frameworks:
        matrix = filter_matrix(outcome.engine, pod)
        diagnosis.nodes = {
            node: [Verdict(v.plugin, v.code, v.reasons) for v in verdicts]
            for node, verdicts in matrix.items()
        }
        diagnosis.complete = True
        diagnosis.shortfall = node_shortfalls(outcome.engine, pod, matrix)
    elif pod.node_name and diagnosis.result == "NoAttempt":
        diagnosis.result, diagnosis.node, diagnosis.message = "Bound", pod.node_name, ""
    return diagnosis


def explain(args: argparse.Namespace, out: TextIO) -> int:
    default = "default"
    if args.namespace is None and "/" not in args.pod:
        default = context_namespace(args.kubeconfig, args.context)
    namespace, name = split_pod(args.pod, args.namespace, default)
    diagnosis = offline(args, namespace, name) if args.snapshot else live(args, namespace, name)
    if args.output == "json":
        out.write(json.dumps(dataclasses.asdict(diagnosis), indent=2) + "\n")
    else:
        out.write(render(diagnosis))
    return 0


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return explain(args, out or sys.stdout)
    except InputError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return EXIT_INPUT
    except FetchError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return EXIT_UNAVAILABLE


if __name__ == "__main__":
    sys.exit(main())
