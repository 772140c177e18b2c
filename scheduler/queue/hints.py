"""Queueing hints: does a cluster event make a rejected pod worth retrying?

``HintEvaluator.worth_requeuing`` is upstream's ``isPodWorthRequeuing``:
- no rejector plugin (the pod failed with an error) -> AFTER_BACKOFF;
- a wildcard event (UnschedulableTimeout, ForceActivate) -> AFTER_BACKOFF,
  unless it carries a target pod that is another pod -> SKIP;
- otherwise only the hints of the pod's rejector plugins (unschedulable and
  pending) for registrations matching the event are called: no hint function
  means Queue, an exception means Queue; Queue from a Pending plugin ->
  IMMEDIATELY, Queue from an Unschedulable plugin -> AFTER_BACKOFF, all Skip
  (or nothing matching) -> SKIP.

Pod updates are turned into sub-events by ``pod_update_events`` (upstream
``PodSchedulingPropertiesChange``); ``is_pod_updated`` tells updates that may
change a scheduling decision from status, resourceVersion, generation,
managedFields and finalizers churn.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from typing import Any

from scheduler.framework.clock import Clock
from scheduler.framework.events import ActionType, ClusterEvent, QueueingHint, Resource
from scheduler.framework.objects import Pod, Raw
from scheduler.framework.types import QueuedPodInfo
from scheduler.queue.metrics import HintResult, QueueMetrics
from scheduler.queue.profile import QueueProfile

log = logging.getLogger(__name__)


class Strategy(enum.IntEnum):
    """Where a pod leaving the unschedulable pool goes; higher wins."""

    SKIP = 0
    AFTER_BACKOFF = 1
    IMMEDIATELY = 2


class HintEvaluator:
    def __init__(
        self, profiles: Mapping[str, QueueProfile], metrics: QueueMetrics, clock: Clock
    ) -> None:
        self._profiles = profiles
        self._metrics = metrics
        self._clock = clock

    def worth_requeuing(
        self, pinfo: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any
    ) -> Strategy:
        rejectors = pinfo.unschedulable_plugins | pinfo.pending_plugins
        if not rejectors:
            return Strategy.AFTER_BACKOFF
        if event.is_wildcard():
            if new is not None and not (isinstance(new, Pod) and new.uid == pinfo.pod.uid):
                return Strategy.SKIP
            return Strategy.AFTER_BACKOFF
        profile = self._profiles.get(pinfo.pod.scheduler_name)
        if profile is None:
            return Strategy.AFTER_BACKOFF
        strategy = Strategy.SKIP
        for plugin in sorted(rejectors):
            for registered in profile.events_of(plugin):
                if not registered.event.matches(event):
                    continue
                if not self._queue(
                    plugin, registered.hint, pinfo.pod, event=event, old=old, new=new
                ):
                    continue
                if plugin in pinfo.pending_plugins:
                    return Strategy.IMMEDIATELY
                if not pinfo.pending_plugins:
                    return Strategy.AFTER_BACKOFF
                strategy = Strategy.AFTER_BACKOFF
                break  # this plugin cannot do better; a Pending plugin still may
        return strategy

    def _queue(
        self, plugin: str, hint_fn: Any, pod: Pod, *, event: ClusterEvent, old: Any, new: Any
    ) -> bool:
        """Call one hint; True for Queue (also for no hint and for a failing hint)."""
        if hint_fn is None:
            return True
        start = self._clock.now()
        try:
            hint = hint_fn(pod, old, new)
            label = HintResult.QUEUE if hint is QueueingHint.QUEUE else HintResult.QUEUE_SKIP
        except Exception:
            log.exception("queueing hint of %s failed for pod %s on %s", plugin, pod.key, event)
            hint, label = QueueingHint.QUEUE, HintResult.ERROR
        self._metrics.hint(plugin, event.label, label, self._clock.now() - start)
        return hint is QueueingHint.QUEUE


# ------------------------------------------------------------------ pod updates
def pod_update_events(old: Pod, new: Pod) -> list[ClusterEvent]:
    """The Update sub-events of a pod change; the generic Update if none applies."""
    resource = Resource.ASSIGNED_POD if new.assigned else Resource.UNSCHEDULED_POD
    actions = [
        action
        for action, changed in (
            (ActionType.UPDATE_POD_LABEL, dict(old.labels) != dict(new.labels)),
            (ActionType.UPDATE_POD_SCALE_DOWN, _scaled_down(old, new)),
            (
                ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
                bool(old.scheduling_gates) and not new.scheduling_gates,
            ),
            (ActionType.UPDATE_POD_TOLERATION, len(old.tolerations) != len(new.tolerations)),
            (ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM, _claims_changed(old, new)),
        )
        if changed
    ]
    return [ClusterEvent(resource, action) for action in actions or [ActionType.UPDATE]]


def _scaled_down(old: Pod, new: Pod) -> bool:
    """Some request of the old pod is lower or gone in the new one."""
    return any(new.requests.get(name) < old.requests.get(name) for name in old.requests.names())


_CLAIM_STATUS_FIELDS = ("resourceClaimStatuses", "extendedResourceClaimStatus")


def _claims_changed(old: Pod, new: Pod) -> bool:
    old_status = old.raw.get("status") or {}
    new_status = new.raw.get("status") or {}
    return any(old_status.get(f) != new_status.get(f) for f in _CLAIM_STATUS_FIELDS)


_IGNORED_METADATA = frozenset({"resourceVersion", "generation", "managedFields", "finalizers"})


def _scheduling_view(raw: Raw) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    metadata = raw.get("metadata") or {}
    status = raw.get("status") or {}
    return (
        {k: v for k, v in raw.items() if k not in ("metadata", "status")},
        {k: v for k, v in metadata.items() if k not in _IGNORED_METADATA},
        {k: v for k, v in status.items() if k in _CLAIM_STATUS_FIELDS},
    )


def is_pod_updated(old: Pod, new: Pod) -> bool:
    """Whether the change may matter to scheduling (upstream ``isPodUpdated``)."""
    return _scheduling_view(old.raw) != _scheduling_view(new.raw)
