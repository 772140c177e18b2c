"""Preemption candidates: how many to look for, the dry run over the
potential nodes, and the choice of one (upstream ``DryRunPreemption``,
``calculateNumCandidates``, ``pickOneNodeForPreemption``).

Pure and synchronous. The dry run is sequential over the potential nodes from
a random offset (upstream runs it in parallel; that only changes which
candidates are found first, as for filtering).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from plugins.default_preemption.victims import start_time
from scheduler.framework import Pod, Status

MAX_INT32 = 2**31 - 1


@dataclass(frozen=True, slots=True)
class Candidate:
    node_name: str
    victims: tuple[Pod, ...]  # most important first
    num_pdb_violations: int


def num_candidates(num_nodes: int, percentage: int, absolute: int) -> int:
    """``max(num_nodes * percentage / 100, absolute)``, at most ``num_nodes``
    (Go integer division)."""
    wanted = max(num_nodes * percentage // 100, absolute)
    return min(wanted, num_nodes)


# node name -> (victims, PDB violations, status); None status means success.
CheckNode = Callable[[str], tuple[Sequence[Pod], int, Status | None]]


def dry_run(
    potential: Sequence[str], offset: int, wanted: int, check: CheckNode
) -> tuple[list[Candidate], dict[str, Status]]:
    """Check nodes from ``offset`` (wrapping) until at least one candidate
    violates no PDB and ``wanted`` were found, or all were checked. Returns
    the candidates (those violating no PDB first, at most ``wanted`` of each
    kind) and the statuses of the nodes that are no candidate."""
    clean: list[Candidate] = []
    violating: list[Candidate] = []
    statuses: dict[str, Status] = {}
    count = len(potential)
    for index in range(count):
        name = potential[(offset + index) % count]
        victims, violations, status = check(name)
        if status is None and victims:
            target = violating if violations else clean
            if len(target) < wanted:
                target.append(Candidate(name, tuple(victims), violations))
            if clean and len(clean) + len(violating) >= wanted:
                break
            continue
        if status is None:
            status = Status.as_error(f'expected at least one victim pod on node "{name}"')
        statuses[name] = status
    return clean + violating, statuses


def _highest_priority_start(candidate: Candidate) -> float:
    """The earliest start time among the highest-priority victims (upstream
    ``GetEarliestPodStartTime``); pods not started count as now."""
    top = max(victim.priority for victim in candidate.victims)
    return min(start_time(victim) for victim in candidate.victims if victim.priority == top)


def _criteria() -> list[Callable[[Candidate], float]]:
    """Upstream's ordered score functions, bigger is better."""
    return [
        lambda c: -c.num_pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: -sum(victim.priority + MAX_INT32 + 1 for victim in c.victims),
        lambda c: -len(c.victims),
        _highest_priority_start,
    ]


def pick_one_node_for_preemption(candidates: Sequence[Candidate]) -> Candidate | None:
    """Fewest PDB violations, then the lowest highest-priority victim, then
    the smallest sum of priorities, then the fewest victims, then the latest
    start among the highest-priority victims; then the first in order."""
    if not candidates:
        return None
    remaining = list(candidates)
    for score in _criteria():
        if len(remaining) == 1:
            break
        best = max(score(candidate) for candidate in remaining)
        remaining = [candidate for candidate in remaining if score(candidate) == best]
    return remaining[0]
