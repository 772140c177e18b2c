"""Named health checks behind /healthz, /livez and /readyz, rendered as upstream does.

The composition root adds named checks to each endpoint; ``render`` turns one
request (endpoint, query) into a status and a plain-text body with the
semantics of the generic apiserver ``healthz`` package:

- all checks pass: 200 ``ok``; with ``?verbose`` one ``[+]name ok`` line per
  check and ``<endpoint> check passed``;
- any check fails: 500 with every check's line and ``<endpoint> check failed``.
  The failure reason is withheld on the root path (it is public); it is logged,
  and shown by the per-check path ``/<endpoint>/<name>``;
- ``?exclude=name`` (repeatable) skips a check; unknown names yield a warning line;
- an endpoint with no checks serves the single ``ping`` check.

Invariants: checks are synchronous, cheap and side-effect free; a check that
raises counts as failed with the exception text as reason. No I/O here.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

log = logging.getLogger(__name__)

# (ok, reason); the reason is ignored when ok.
CheckResult = tuple[bool, str]
CheckFn = Callable[[], CheckResult]


class Endpoint(enum.StrEnum):
    HEALTHZ = "healthz"
    LIVEZ = "livez"
    READYZ = "readyz"


class CheckName(enum.StrEnum):
    """Upstream check names."""

    PING = "ping"
    LEADER_ELECTION = "leaderElection"
    SHUTDOWN = "shutdown"
    HANDLER_SYNC = "sched-handler-sync"


def ping() -> CheckResult:
    return True, ""


@dataclass(frozen=True, slots=True)
class HealthResponse:
    status: int
    body: str


class HealthChecks:
    """The checks of each endpoint, in the order they were added."""

    def __init__(self) -> None:
        self._checks: dict[Endpoint, dict[str, CheckFn]] = {e: {} for e in Endpoint}

    def add_healthz(self, name: str, check: CheckFn) -> None:
        """A check for the deprecated ``/healthz`` only."""
        self._add(Endpoint.HEALTHZ, name, check)

    def add_liveness(self, name: str, check: CheckFn) -> None:
        self._add(Endpoint.LIVEZ, name, check)

    def add_readiness(self, name: str, check: CheckFn) -> None:
        self._add(Endpoint.READYZ, name, check)

    def add_leader_election(self, check: CheckFn) -> None:
        """The lease watchdog: upstream installs it on /healthz and /readyz."""
        self.add_healthz(CheckName.LEADER_ELECTION, check)
        self.add_readiness(CheckName.LEADER_ELECTION, check)

    def checks(self, endpoint: Endpoint) -> dict[str, CheckFn]:
        """The endpoint's checks, or ``ping`` alone when none were added."""
        return dict(self._checks[endpoint]) or {CheckName.PING.value: ping}

    def _add(self, endpoint: Endpoint, name: str, check: CheckFn) -> None:
        checks = self._checks[endpoint]
        if not name or "/" in name:
            raise ValueError(f"invalid health check name {name!r}")
        if name in checks:
            raise ValueError(f"health check {name!r} already added to /{endpoint}")
        checks[name] = check


def scheduler_health(
    *,
    shutting_down: Callable[[], bool],
    handlers_synced: Callable[[], bool],
    leader_election: CheckFn | None = None,
) -> HealthChecks:
    """The upstream kube-scheduler set: /healthz = leaderElection (or ping), /livez =
    ping, /readyz = leaderElection (when enabled), shutdown, sched-handler-sync."""
    health = HealthChecks()
    if leader_election is not None:
        health.add_leader_election(leader_election)
    health.add_readiness(
        CheckName.SHUTDOWN,
        lambda: (False, "process is shutting down") if shutting_down() else (True, ""),
    )
    health.add_readiness(
        CheckName.HANDLER_SYNC,
        lambda: (True, "") if handlers_synced() else (False, "waiting for handlers to sync"),
    )
    return health


def _run(check: CheckFn) -> CheckResult:
    try:
        ok, reason = check()
    except Exception as exc:  # a broken check is a failed check, not a broken endpoint
        return False, f"{type(exc).__name__}: {exc}"
    return ok, reason


def render(
    health: HealthChecks, endpoint: Endpoint, verbose: bool, exclude: Iterable[str] = ()
) -> HealthResponse:
    """The response to ``GET /<endpoint>[?verbose][&exclude=name...]``."""
    checks = health.checks(endpoint)
    excluded = set(exclude)
    lines: list[str] = []
    failed: list[str] = []
    for name, check in checks.items():
        if name in excluded:
            lines.append(f"[+]{name} excluded: ok")
            continue
        ok, reason = _run(check)
        if ok:
            lines.append(f"[+]{name} ok")
        else:
            lines.append(f"[-]{name} failed: reason withheld")
            failed.append(f"[-]{name} failed: {reason}")
    unknown = sorted(excluded - checks.keys())
    if unknown:
        quoted = ",".join(f'"{name}"' for name in unknown)
        lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}")
    output = "".join(f"{line}\n" for line in lines)
    if failed:
        log.info("/%s check failed: %s", endpoint, "; ".join(failed))
        return HealthResponse(500, f"{output}{endpoint} check failed\n")
    if verbose:
        return HealthResponse(200, f"{output}{endpoint} check passed\n")
    return HealthResponse(200, "ok")


def render_one(health: HealthChecks, endpoint: Endpoint, name: str) -> HealthResponse | None:
    """The response to ``GET /<endpoint>/<name>``; None when there is no such check."""
    check = health.checks(endpoint).get(name)
    if check is None:
        return None
    ok, reason = _run(check)
    if ok:
        return HealthResponse(200, "ok")
    return HealthResponse(500, f"internal server error: {reason}\n")
