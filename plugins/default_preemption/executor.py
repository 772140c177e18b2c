"""Carrying a preemption out: the API writes, in the background (upstream
``Executor.prepareCandidateAsync``; SchedulerAsyncPreemption is on by default
since 1.33, so 1.36 works this way).

``start`` runs inside the scheduling cycle: it marks the preemptor as
"preempting" and hands the writes to a background task owned by the
scheduler (``Handle.spawn``). The task clears ``nominatedNodeName`` of
lower-priority pods nominated to the node, then preempts each victim: a victim
waiting at Permit is rejected in memory; any other gets the
``DisruptionTarget`` condition (reason ``PreemptionByScheduler``) and is
deleted, and a ``Preempted`` event. All victims but the last go in parallel;
the last one alone, so that the PreEnqueue check can tell from the informer
whether its deletion has already landed.

Invariants: a preemptor is in ``_preempting`` from ``start`` until its task
ends; ``_last_victim`` has an entry only while the last deletion is in
flight. On any failure the preemptor is activated, so it is not stuck in
the unschedulable pool waiting for deletions that will not come.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Sequence
from typing import Any

from plugins.default_preemption.eligibility import (
    DISRUPTION_TARGET,
    REASON_PREEMPTION_BY_SCHEDULER,
)
from scheduler.framework import Handle, ObjectStore, Pod

log = logging.getLogger(__name__)

STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
EVENT_PREEMPTED = "Preempted"
ACTION_PREEMPTING = "Preempting"
TYPE_NORMAL = "Normal"
NOT_FOUND = 404


def _pod_path(pod: Pod, subresource: str = "") -> str:
    path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}"
    return f"{path}/{subresource}" if subresource else path


def _rfc3339(unix: float) -> str:
    moment = datetime.datetime.fromtimestamp(unix, tz=datetime.UTC).replace(microsecond=0)
    return moment.isoformat().replace("+00:00", "Z")


def disruption_condition_patch(
    victim: Pod, scheduler_name: str, now: float
) -> dict[str, Any] | None:
    """The status patch adding ``DisruptionTarget=True``, or None when the
    victim already carries that exact condition (upstream ``UpdatePodCondition``)."""
    message = f"{scheduler_name}: preempting to accommodate a higher priority pod"
    current = next(
        (
            c
            for c in (victim.raw.get("status") or {}).get("conditions") or ()
            if c.get("type") == DISRUPTION_TARGET
        ),
        None,
    )
    if (
        current is not None
        and current.get("status") == "True"
        and current.get("reason") == REASON_PREEMPTION_BY_SCHEDULER
        and current.get("message") == message
    ):
        return None
    condition: dict[str, Any] = {
        "type": DISRUPTION_TARGET,
        "status": "True",
        "reason": REASON_PREEMPTION_BY_SCHEDULER,
        "message": message,
        "lastTransitionTime": _rfc3339(now),
    }
    if current is not None and current.get("status") == "True":
        condition["lastTransitionTime"] = current.get("lastTransitionTime") or _rfc3339(now)
    if victim.generation:
        condition["observedGeneration"] = victim.generation
    return {"status": {"conditions": [condition]}}


class Executor:
    def __init__(self, handle: Handle, pods: ObjectStore, plugin_name: str) -> None:
        self._handle = handle
        self._pods = pods
        self._plugin = plugin_name
        self._preempting: set[str] = set()
        self._last_victim: dict[str, str] = {}  # preemptor UID -> victim namespace/name

    # ------------------------------------------------------------ cycle side
    def is_running(self, uid: str) -> bool:
        """Upstream ``IsPodRunningPreemption``: the preemptor's writes are in
        flight, unless only the last deletion is and the informer shows it landed."""
        if uid not in self._preempting:
            return False
        key = self._last_victim.get(uid)
        if key is None:
            return True
        raw = self._pods.get(key)
        return raw is not None and not (raw.get("metadata") or {}).get("deletionTimestamp")

    def start(self, node_name: str, victims: Sequence[Pod], preemptor: Pod) -> None:
        to_delete = [victim for victim in victims if not victim.deleting]
        if not to_delete:
            return
        self._handle.metrics.preemption_victims(len(victims))
        self._preempting.add(preemptor.uid)
        self._handle.spawn(
            f"preemption:{preemptor.key}", self._run(node_name, to_delete, preemptor)
        )

    # ------------------------------------------------------------ background
    async def _run(self, node_name: str, victims: list[Pod], preemptor: Pod) -> None:
        failed = False
        try:
            failed = not await self._clear_lower_nominations(node_name, preemptor)
            *first, last = victims
            results = await asyncio.gather(
                *(self._preempt(node_name, victim, preemptor) for victim in first)
            )
            if all(results):
                self._last_victim[preemptor.uid] = last.key
                failed = not await self._preempt(node_name, last, preemptor) or failed
            else:
                failed = True
        finally:
            self._preempting.discard(preemptor.uid)
            self._last_victim.pop(preemptor.uid, None)
            if failed:
                self._handle.activate([preemptor])

    async def _clear_lower_nominations(self, node_name: str, preemptor: Pod) -> bool:
        """Pods of lower priority nominated to this node may no longer fit:
        clear their nomination so they look elsewhere sooner."""
        ok = True
        for other in self._handle.nominated_pods_for_node(node_name):
            if other.priority >= preemptor.priority or not other.nominated_node_name:
                continue
            try:
                await self._handle.api.request(
                    "PATCH",
                    _pod_path(other, "status"),
                    {"status": {"nominatedNodeName": None}},
                    STRATEGIC_MERGE_PATCH,
                )
            except Exception as error:
                if getattr(error, "status", None) != NOT_FOUND:
                    log.warning("cannot clear nominatedNodeName of %s: %s", other.key, error)
                    ok = False
        return ok

    async def _preempt(self, node_name: str, victim: Pod, preemptor: Pod) -> bool:
        """Upstream ``PreemptPod``; False when an API call failed."""
        note = f"Preempted by pod {preemptor.uid} on node {node_name}"
        waiting = self._handle.waiting_pod(victim.uid)
        if waiting is not None:
            waiting.reject(self._plugin, "preempted")
            note += " (in kube-scheduler memory)."
        else:
            patch = disruption_condition_patch(
                victim, preemptor.scheduler_name, self._handle.clock.wall()
            )
            try:
                if patch is not None:
                    await self._handle.api.request(
                        "PATCH", _pod_path(victim, "status"), patch, STRATEGIC_MERGE_PATCH
                    )
                await self._handle.api.request("DELETE", _pod_path(victim))
            except Exception as error:
                if getattr(error, "status", None) == NOT_FOUND:
                    log.info("victim %s of %s is already gone", victim.key, preemptor.key)
                    return True
                log.error("cannot preempt %s for %s: %s", victim.key, preemptor.key, error)
                return False
            log.info("pod %s preempted %s on node %s", preemptor.key, victim.key, node_name)
        self._handle.events.event(victim.raw, TYPE_NORMAL, EVENT_PREEMPTED, ACTION_PREEMPTING, note)
        return True
