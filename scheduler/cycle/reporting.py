"""What users see about a pod: the PodScheduled condition, Events, and the
per-attempt diagnosis kept for the debug endpoint.

Condition patches are written by a background writer that coalesces by pod
(only the newest message per pod is written), so a burst of failures never
blocks the scheduling loop and binds are not starved by status writes.

Attempt records (``failed_attempt``, ``scheduled_attempt``) are bounded
whatever the cluster size: the reason histogram (at most ``REASONS_KEPT``
reasons, the most frequent), the number of rejected nodes and the verdicts of
a sample of at most ``NODE_SAMPLE`` nodes, every text cut to ``TEXT_LIMIT``
characters and the message to ``MESSAGE_LIMIT``. One record takes at most
``ATTEMPT_BYTES_BOUND`` bytes (checked by a test with worst-case texts; a
typical one, two reasons, is about 7 KiB). Building one visits at most ``NODE_SAMPLE`` node
statuses: the histogram is the one the failure message already counted.
"""

from __future__ import annotations

import asyncio
import datetime
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scheduler.framework.clock import Clock
from scheduler.framework.objects import Pod
from scheduler.framework.types import FitError, NodeToStatus

if TYPE_CHECKING:
    from scheduler.cycle.algorithm import ScheduleResult

log = logging.getLogger(__name__)

REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"
EVENT_FAILED_SCHEDULING = "FailedScheduling"
EVENT_SCHEDULED = "Scheduled"
ACTION_SCHEDULING = "Scheduling"
ACTION_BINDING = "Binding"
TYPE_WARNING = "Warning"
TYPE_NORMAL = "Normal"
POD_SCHEDULED = "PodScheduled"

NODE_SAMPLE = 8
REASONS_KEPT = 16


def scheduled_note(namespace: str, name: str, host: str) -> str:
    """The note of the "Scheduled" event, as upstream words it."""
    return f"Successfully assigned {namespace}/{name} to {host}"


REASONS_PER_NODE = 4
TEXT_LIMIT = 256
MESSAGE_LIMIT = 1024
ATTEMPT_BYTES_BOUND = 32 * 1024

PatchStatus = Callable[[str, str, Mapping[str, Any]], Awaitable[object]]


def _rfc3339(unix: float) -> str:
    moment = datetime.datetime.fromtimestamp(unix, tz=datetime.UTC).replace(microsecond=0)
    return moment.isoformat().replace("+00:00", "Z")


def scheduled_condition_patch(
    pod: Pod, reason: str, message: str, now: float, nominated_node: str | None
) -> dict[str, Any] | None:
    """The strategic-merge patch for ``status``, or None if nothing would change.

    As upstream's ``UpdatePodCondition``: ``lastTransitionTime`` moves only
    when the condition's status flips, and the condition is rewritten when its
    reason, message or observed generation differ. ``nominated_node`` None
    leaves ``nominatedNodeName`` alone; "" clears it.
    """
    raw_status = pod.raw.get("status")
    status: Mapping[str, Any] = raw_status if isinstance(raw_status, Mapping) else {}
    conditions = status.get("conditions") or ()
    current = next(  # a malformed status (a parse error to report) has no condition
        (c for c in conditions if isinstance(c, Mapping) and c.get("type") == POD_SCHEDULED),
        None,
    )
    transition = _rfc3339(now)
    if current is not None and current.get("status") == "False":
        transition = current.get("lastTransitionTime") or transition
    condition: dict[str, Any] = {
        "type": POD_SCHEDULED,
        "status": "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": transition,
        "lastProbeTime": None,
    }
    if pod.generation:
        condition["observedGeneration"] = pod.generation
    patch: dict[str, Any] = {}
    unchanged = (
        current is not None
        and current.get("status") == "False"
        and current.get("reason") == reason
        and current.get("message") == message
        and (current.get("observedGeneration") or 0) == pod.generation
    )
    if not unchanged:
        patch["conditions"] = [condition]
    if nominated_node is not None and (status.get("nominatedNodeName") or "") != nominated_node:
        patch["nominatedNodeName"] = nominated_node or None
    return {"status": patch} if patch else None


@dataclass(frozen=True, slots=True)
class _Pending:
    uid: str
    patch: Mapping[str, Any]


# A transient failure (no answer, 429, 5xx) is retried with backoff 0.1 s,
# 0.2 s, ... capped at 3.2 s, 10 attempts in all: about 16 s, long enough to
# ride out an API server restart, so a pod is not left without the condition
# that says why it waits.
RETRIES = 10
MAX_RETRY_DELAY_SECONDS = 3.2


class StatusWriter:
    """Writes pod status patches in the background, newest per pod wins.

    Invariants:
    - A patch carries ``metadata.uid`` of the pod it was computed for, a
      precondition: it can never land on a recreated pod of the same name.
    - A pending patch is dropped when the pod binds or is deleted (``drop``,
      from the event handlers) and before the binding cycle binds
      (``settle``, which also waits for a write of that pod in flight), so a
      stale ``PodScheduled=False`` never lands after the bind.
    """

    def __init__(self, patch: PatchStatus, clock: Clock, retries: int = RETRIES) -> None:
        self._patch = patch
        self._clock = clock
        self._retries = retries
        self._pending: dict[tuple[str, str], _Pending] = {}
        self._wake = asyncio.Event()
        self._writing: tuple[str, str] | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self._closed = False
        self.written = 0
        self.failed = 0

    def submit(self, namespace: str, name: str, patch: Mapping[str, Any], uid: str = "") -> None:
        self._pending[(namespace, name)] = _Pending(uid, patch)
        self._wake.set()

    def drop(self, namespace: str, name: str) -> None:
        """Forget the pod's pending patch: it bound or went away."""
        self._pending.pop((namespace, name), None)

    async def settle(self, namespace: str, name: str) -> None:
        """Drop the pod's pending patch and wait until no write of it is in
        flight (the binding cycle, right before Bind)."""
        key = (namespace, name)
        self._pending.pop(key, None)
        while self._writing == key:
            await self._idle.wait()

    def pending(self) -> int:
        return len(self._pending)

    async def run(self) -> None:
        """Write until closed and drained."""
        while True:
            if not self._pending:
                if self._closed:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            key = next(iter(self._pending))
            pending = self._pending.pop(key)
            body = pending.patch
            if pending.uid:
                body = {"metadata": {"uid": pending.uid}, **pending.patch}
            self._writing = key
            self._idle.clear()
            try:
                await self._write(key, body)
            finally:
                self._writing = None
                self._idle.set()

    def close(self) -> None:
        self._closed = True
        self._wake.set()

    async def _write(self, key: tuple[str, str], patch: Mapping[str, Any]) -> None:
        namespace, name = key
        for attempt in range(self._retries):
            try:
                await self._patch(namespace, name, patch)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                status = getattr(error, "status", None)
                if status in (404, 409):  # the pod is gone or was recreated
                    return
                if attempt + 1 == self._retries or not _transient(status):
                    self.failed += 1
                    log.warning("cannot update status of pod %s/%s: %s", namespace, name, error)
                    return
                await self._clock.sleep(min(0.1 * 2**attempt, MAX_RETRY_DELAY_SECONDS))
            else:
                self.written += 1
                return


def _transient(http_status: int | None) -> bool:
    """Worth retrying: no answer at all (connection), throttled, or a 5xx."""
    return http_status is None or http_status == 429 or http_status >= 500


def _cut(text: str, limit: int = TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _sample(node_to_status: NodeToStatus) -> dict[str, Any]:
    """The verdicts of the first ``NODE_SAMPLE`` rejected nodes."""
    return {
        _cut(name): {
            "plugin": status.plugin,
            "code": status.code.label,
            "reasons": [_cut(reason) for reason in status.reasons[:REASONS_PER_NODE]],
        }
        for name, status in itertools.islice(node_to_status.statuses.items(), NODE_SAMPLE)
    }


def _histogram(counts: Mapping[str, int]) -> dict[str, int]:
    """The ``REASONS_KEPT`` most frequent reasons, most frequent first."""
    kept = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:REASONS_KEPT]
    return {_cut(reason): count for reason, count in kept}


def failed_attempt(
    cycle: int, wall: float, reason: str, message: str, fit_error: FitError | None
) -> dict[str, Any]:
    """What ``/debug/pods`` shows of a failed attempt: how many nodes said no
    for each reason, and a sample of who said no."""
    record: dict[str, Any] = {
        "cycle": cycle,
        "time": wall,
        "result": reason,
        "message": _cut(message, MESSAGE_LIMIT),
        "nodes": {},
    }
    if fit_error is not None:
        node_to_status = fit_error.diagnosis.node_to_status
        record["nodes"] = _sample(node_to_status)
        record["rejectedNodes"] = len(node_to_status.statuses)
        record["reasons"] = _histogram(fit_error.reason_counts())
    return record


def scheduled_attempt(cycle: int, wall: float, result: ScheduleResult) -> dict[str, Any]:
    """What ``/debug/pods`` shows of a successful attempt, with the best scores
    and a sample of the nodes that were rejected."""
    top = result.scores.best(3) if result.scores is not None else []
    node_to_status = result.diagnosis.node_to_status
    return {
        "cycle": cycle,
        "time": wall,
        "result": "Scheduled",
        "node": result.suggested_host,
        "evaluatedNodes": result.evaluated_nodes,
        "feasibleNodes": result.feasible_nodes,
        "rejectedNodes": len(node_to_status.statuses),
        "nodes": _sample(node_to_status),
        "topScores": [
            {"node": s.name, "total": s.total, "plugins": {w.plugin: w.score for w in s.scores}}
            for s in top
        ],
    }
