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
from collections.abc import Callable, Mapping
from typing import Any

from scheduler.framework.clock import Clock
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    QueueingHint,
    QueueingHintFn,
    Resource,
)
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
        return self.round(event, old, new).worth_requeuing(pinfo)

    def round(self, event: ClusterEvent, old: Any, new: Any) -> HintRound:
        """An evaluator for one event over many pods."""
        return HintRound(self._profiles, event, old, new, metrics=self._metrics, clock=self._clock)


# The hints of one plugin's registrations matching an event (None: no hint, Queue).
_Hints = tuple[QueueingHintFn | None, ...]
_NO_HINTS: _Hints = ()


class HintRound:
    """``worth_requeuing`` for one event, pod after pod (upstream's loop in
    ``movePodsToActiveOrBackoffQueue``): the registrations matching the event
    are found once per profile and plugin, and whether it releases a gate
    once per gating plugin's events, not once per pod; each hint call is
    still timed and observed. Same verdicts as evaluating each pod alone."""

    __slots__ = ("_clock", "_event", "_gates", "_label", "_matching", "_metrics", "_new", "_old")

    def __init__(
        self,
        profiles: Mapping[str, QueueProfile],
        event: ClusterEvent,
        old: Any,
        new: Any,
        *,
        metrics: QueueMetrics,
        clock: Clock,
    ) -> None:
        self._metrics = metrics
        self._clock = clock
        self._event = event
        self._label = event.label
        self._old = old
        self._new = new
        self._matching = _Matching(profiles, event)
        # id(gating events) -> (those events, whether the event matches one)
        self._gates: dict[int, tuple[tuple[ClusterEvent, ...], bool]] = {}

    def releases_gate(self, pinfo: QueuedPodInfo) -> bool:
        """A gated pod is considered only on its gating plugin's events."""
        events = pinfo.gating_plugin_events
        known = self._gates.get(id(events))
        if known is None or known[0] is not events:
            known = self._gates[id(events)] = (
                events,
                any(registered.matches(self._event) for registered in events),
            )
        return known[1]

    def worth_requeuing(self, pinfo: QueuedPodInfo) -> Strategy:
        pending = pinfo.pending_plugins
        rejectors = pinfo.unschedulable_plugins | pending
        if not rejectors:
            return Strategy.AFTER_BACKOFF
        event = self._event
        if self._matching.wildcard:
            new = self._new
            if new is not None and not (isinstance(new, Pod) and new.uid == pinfo.pod.uid):
                return Strategy.SKIP
            return Strategy.AFTER_BACKOFF
        matching = self._matching.of(pinfo.pod.scheduler_name)
        if matching is None:
            return Strategy.AFTER_BACKOFF
        strategy = Strategy.SKIP
        for plugin in sorted(rejectors) if len(rejectors) > 1 else rejectors:
            for hint in matching(plugin):
                if not self._queue(plugin, hint, pinfo.pod, event):
                    continue
                if plugin in pending:
                    return Strategy.IMMEDIATELY
                if not pending:
                    return Strategy.AFTER_BACKOFF
                strategy = Strategy.AFTER_BACKOFF
                break  # this plugin cannot do better; a Pending plugin still may
        return strategy

    def _queue(
        self, plugin: str, hint_fn: QueueingHintFn | None, pod: Pod, event: ClusterEvent
    ) -> bool:
        """Call one hint; True for Queue (also for no hint and for a failing hint)."""
        if hint_fn is None:
            return True
        start = self._clock.now()
        try:
            hint = hint_fn(pod, self._old, self._new)
            label = HintResult.QUEUE if hint is QueueingHint.QUEUE else HintResult.QUEUE_SKIP
        except Exception:
            log.exception("queueing hint of %s failed for pod %s on %s", plugin, pod.key, event)
            hint, label = QueueingHint.QUEUE, HintResult.ERROR
        self._metrics.hint(plugin, self._label, label, self._clock.now() - start)
        return hint is QueueingHint.QUEUE


class _Matching:
    """Per profile and plugin, the hints of its registrations that match one
    event (``None`` standing for "no hint: Queue"), computed on first use."""

    __slots__ = ("_by_profile", "_event", "_profiles", "wildcard")

    def __init__(self, profiles: Mapping[str, QueueProfile], event: ClusterEvent) -> None:
        self._profiles = profiles
        self._event = event
        self.wildcard = event.is_wildcard()
        self._by_profile: dict[str, Callable[[str], _Hints] | None] = {}

    def of(self, profile_name: str) -> Callable[[str], _Hints] | None:
        """A lookup ``plugin -> hints`` for the profile, or None without one."""
        lookup = self._by_profile.get(profile_name)
        if lookup is None and profile_name not in self._by_profile:
            profile = self._profiles.get(profile_name)
            lookup = self._by_profile[profile_name] = (
                None if profile is None else self._lookup(profile)
            )
        return lookup

    def _lookup(self, profile: QueueProfile) -> Callable[[str], _Hints]:
        event = self._event
        cache: dict[str, _Hints] = {}

        def hints(plugin: str) -> _Hints:
            found = cache.get(plugin)
            if found is None:
                found = cache[plugin] = (
                    tuple(
                        registered.hint
                        for registered in profile.events_of(plugin)
                        if registered.event.matches(event)
                    )
                    or _NO_HINTS
                )
            return found

        return hints


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
