"""DynamicResources' cluster events and queueing hints (upstream
``EventsToRegister``, ``isSchedulableAfterClaimChange``,
``isSchedulableAfterPodChange``).

Node adds and label/allocatable updates, DeviceClass and ResourceSlice adds
and updates requeue without a hint. A claim event requeues a pod only when
it frees devices (an allocation cleared) or changes the status of a claim
the pod uses, once all its claims resolve; a pod's generated-claim update
requeues only that pod, once its claims resolve. Claim and slice deletes are
not registered (an allocated claim is deallocated, an update, before it can
go). The claim registration carries ``CLAIM_NAMES``, so the queue asks only
the pods that name the claim (every pod when an allocation is cleared).
Pure reads of the claim tracker; no writes.
"""

from __future__ import annotations

from collections.abc import Hashable

from plugins.dynamicresources.claims import ClaimNotReady, may_use, named_claims, pod_claims
from plugins.dynamicresources.model import Raw
from plugins.dynamicresources.state import ClaimTracker, allocation_of, claim_uid
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    HintInterest,
    Pod,
    QueueingHint,
)


def _freed(old: Raw | None, new: Raw | None) -> bool:
    """An allocation was cleared: every waiting pod may fit now."""
    return (
        old is not None
        and new is not None
        and allocation_of(old) is not None
        and allocation_of(new) is None
    )


def _claim_event_keys(old: Raw | None, new: Raw | None) -> frozenset[Hashable] | None:
    if new is None:
        return frozenset()
    if _freed(old, new):
        return None
    metadata = new.get("metadata") or {}
    return frozenset(((metadata.get("namespace", ""), metadata.get("name")),))


def _pod_claim_keys(pod: Pod) -> frozenset[Hashable]:
    return frozenset((pod.namespace, name) for name in named_claims(pod))


# after_claim_change queues a pod only if it names the claim (``may_use``) or
# the change frees devices: the same rule as names for the queue's index.
CLAIM_NAMES = HintInterest("DynamicResources/claims", _claim_event_keys, _pod_claim_keys)


class ClaimHints:
    """The two hints, over the process's claim tracker."""

    def __init__(self, tracker: ClaimTracker) -> None:
        self._tracker = tracker

    def events(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.NODE,
                    ActionType.ADD
                    | ActionType.UPDATE_NODE_LABEL
                    | ActionType.UPDATE_NODE_ALLOCATABLE,
                )
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE),
                self.after_claim_change,
                CLAIM_NAMES,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                self.after_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE)
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE)
            ),
        ]

    def after_claim_change(self, pod: Pod, old: Raw | None, new: Raw | None) -> QueueingHint:
        if new is None:
            return QueueingHint.QUEUE_SKIP
        freed = _freed(old, new)
        if not freed and not may_use(pod, new):
            # skipped below either way (not ready, or not one of its claims);
            # this spares the claim lookups for every waiting pod per event
            return QueueingHint.QUEUE_SKIP
        try:
            claims = pod_claims(pod, self._tracker.get)
        except ClaimNotReady:
            return QueueingHint.QUEUE_SKIP
        if freed:
            return QueueingHint.QUEUE  # devices were freed
        if not any(claim_uid(claim) == claim_uid(new) for claim in claims):
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        if (old.get("status") or {}) == (new.get("status") or {}):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def after_pod_change(self, pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
        if new is None or new.uid != pod.uid:
            return QueueingHint.QUEUE_SKIP
        try:
            pod_claims(new, self._tracker.get)
        except ClaimNotReady:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE
