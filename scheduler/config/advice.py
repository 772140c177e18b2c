"""What an operator should hear about a valid configuration at start-up:
fields accepted without the effect they have upstream (``notes``, logged at
info) and choices that are legal but dangerous (``warnings``, logged at
warning and listed in ``/configz``). Pure: configuration in, sentences out."""

from __future__ import annotations

from scheduler.config.model import SchedulerConfiguration

UPSTREAM_SCHEDULER_NAME = "default-scheduler"
UPSTREAM_LEASE = ("kube-system", "kube-scheduler")


def notes(config: SchedulerConfiguration) -> list[str]:
    found = [
        f"parallelism: {config.parallelism} accepted; filtering and scoring run on one"
        " core here (the event loop), whatever its value"
    ]
    if config.enable_profiling or config.enable_contention_profiling:
        found.append(
            "enableProfiling/enableContentionProfiling accepted without effect:"
            " there is no /debug/pprof (Go's profiler) in pyscheduler"
        )
    return found


def warnings(config: SchedulerConfiguration) -> list[str]:
    found = []
    for index, profile in enumerate(config.profiles):
        if profile.scheduler_name == UPSTREAM_SCHEDULER_NAME:
            found.append(
                f"profiles[{index}].schedulerName is {UPSTREAM_SCHEDULER_NAME!r}: every pod"
                " without a schedulerName is then scheduled by both kube-scheduler and"
                " pyscheduler, which race to bind it; choose a name of your own"
            )
    election = config.leader_election
    if election.leader_elect and (election.resource_namespace, election.resource_name) == (
        UPSTREAM_LEASE
    ):
        found.append(
            "leaderElection uses the Lease kube-system/kube-scheduler, kube-scheduler's own:"
            " pyscheduler and kube-scheduler would take turns, each stopping the other;"
            " set leaderElection.resourceName to a name of your own"
        )
    return found
