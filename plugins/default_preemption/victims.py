"""Victim selection on one node (upstream ``SelectVictimsOnNode``).

Synchronous and free of I/O: it works on a what-if copy of the NodeInfo and
a clone of the CycleState that the caller made for this node, and reaches the
profile's plugins only through ``WhatIf`` (the Handle): removing or re-adding
a pod runs every PreFilter plugin's RemovePod/AddPod extension, so plugins
with precomputed state (InterPodAffinity, PodTopologySpread) stay correct.

The rule: remove every pod of lower priority than the preemptor; if the
preemptor still does not fit, the node is no candidate. Otherwise reprieve
as many as possible, most important first, the ones whose eviction would
violate a PodDisruptionBudget before the others; every pod that cannot be
re-added without the preemptor failing again is a victim.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Sequence
from typing import Protocol

from plugins.default_preemption.pdb import DisruptionBudget, split_by_pdb_violation
from scheduler.framework import CycleState, NodeInfo, Pod, Status

REASON_NO_VICTIMS = "No preemption victims found for incoming pod"


class WhatIf(Protocol):
    """What the Handle offers for what-if evaluations."""

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status | None: ...

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None: ...

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None: ...


def start_time(pod: Pod) -> float:
    """``status.startTime`` in Unix seconds; a pod that has not started counts
    as starting now, i.e. after every pod that has (upstream ``GetPodStartTime``)."""
    raw = (pod.raw.get("status") or {}).get("startTime")
    if not raw:
        return math.inf
    try:
        return datetime.datetime.fromisoformat(raw).timestamp()
    except ValueError:
        return math.inf


def importance(pod: Pod) -> tuple[int, float]:
    """Sort key, most important first: priority descending, then the pod
    that started earlier (upstream ``MoreImportantPod``)."""
    return (-pod.priority, start_time(pod))


def may_preempt(preemptor: Pod, victim: Pod) -> bool:
    """Only pods of strictly lower priority can be preempted."""
    return victim.priority < preemptor.priority


class VictimSelectionError(Exception):
    """A PreFilter extension failed during the what-if: the node errs."""


def select_victims_on_node(
    what_if: WhatIf,
    state: CycleState,
    pod: Pod,
    node_info: NodeInfo,
    pdbs: Sequence[DisruptionBudget],
) -> tuple[list[Pod], int, Status | None]:
    """(victims most important first, PDB violations among them, status).
    ``state`` and ``node_info`` are the caller's copies and are changed.
    A None status with victims is success; otherwise the status says why
    this node is no candidate."""

    def remove(victim: Pod) -> None:
        node_info.remove_pod(victim)
        status = what_if.run_pre_filter_extension_remove_pod(state, pod, victim, node_info)
        if status is not None and not status.is_success():
            raise VictimSelectionError(status.message())

    def add(victim: Pod) -> None:
        node_info.add_pod(victim)
        status = what_if.run_pre_filter_extension_add_pod(state, pod, victim, node_info)
        if status is not None and not status.is_success():
            raise VictimSelectionError(status.message())

    potential = [other for other in node_info.pods.values() if may_preempt(pod, other)]
    try:
        for victim in potential:
            remove(victim)
        if not potential:
            return [], 0, Status.unresolvable(REASON_NO_VICTIMS)
        status = what_if.run_filter_plugins_with_nominated_pods(state, pod, node_info)
        if status is not None and not status.is_success():
            return [], 0, status
        potential.sort(key=importance)
        violating, non_violating = split_by_pdb_violation(potential, pdbs)
        victims: list[Pod] = []

        def reprieve(candidate: Pod) -> bool:
            add(candidate)
            fits = what_if.run_filter_plugins_with_nominated_pods(state, pod, node_info)
            if fits is None or fits.is_success():
                return True
            remove(candidate)
            victims.append(candidate)
            return False

        violations = sum(1 for candidate in violating if not reprieve(candidate))
        for candidate in non_violating:
            reprieve(candidate)
    except VictimSelectionError as error:
        return [], 0, Status.as_error(str(error))
    if violating and non_violating:
        victims.sort(key=importance)
    return victims, violations, None
