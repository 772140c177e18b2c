"""DynamicResources' PostFilter (upstream ``PostFilter``), run when no node
passed Filter.

The first claim (in index order) that was unavailable on some node and is
reserved by nobody else is deallocated in the background, so that the
claim's update requeues the pod; the status says the deallocation started,
never that it completed. A failed write is a Warning event on the pod,
which is activated again after the initial backoff. A stale
extended-resource claim of an earlier attempt is deleted. At most one
write per claim runs at a time (``BackgroundWrites``); the decision itself
is synchronous.
"""

from __future__ import annotations

import logging

from plugins.dynamicresources import extended as extended_claims
from plugins.dynamicresources.cycledata import CycleData
from plugins.dynamicresources.model import Raw
from plugins.dynamicresources.parts import Parts
from plugins.dynamicresources.reasons import (
    EVENT_DEALLOCATION_FAILED,
    REASON_DEALLOCATING,
    REASON_DELETED,
    REASON_NO_CLAIMS,
    REASON_STILL_UNSCHEDULABLE,
    RETRY_AFTER_FAILED_DEALLOCATION_SECONDS,
)
from plugins.dynamicresources.state import claim_key
from plugins.dynamicresources.writes import DeallocateError, deallocate, delete_claim
from scheduler.framework import ApiWriter, Pod, Status

log = logging.getLogger(__name__)


def post_filter(parts: Parts, data: CycleData, pod: Pod) -> Status:
    if not data.claims:
        return Status.unschedulable(REASON_NO_CLAIMS)
    for index in sorted(data.unavailable):
        claim = data.claims[index]
        reserved = (claim.get("status") or {}).get("reservedFor") or ()
        if not reserved or (len(reserved) == 1 and reserved[0].get("uid") == pod.uid):
            _deallocate(parts, claim, pod)
            return Status.unschedulable(REASON_DEALLOCATING)
    stale = data.extended_claim()
    if stale is not None and not extended_claims.is_placeholder(stale):

        async def delete(claim: Raw = stale, api: ApiWriter = parts.handle.api) -> None:
            await delete_claim(api, claim)

        parts.writes.submit(claim_key(stale), f"delete claim {claim_key(stale)}", delete)
        return Status.unschedulable(REASON_DELETED)
    return Status.unschedulable(REASON_STILL_UNSCHEDULABLE)


def _deallocate(parts: Parts, claim: Raw, pod: Pod) -> None:
    """Clear the claim's allocation in the background (upstream writes it
    inside PostFilter, which is synchronous here). Success needs no
    report: the claim's update requeues the pod. A failure is a Warning
    event on the pod, which is retried after the initial backoff (as an
    Error in upstream's PostFilter) rather than at the next flush of
    unschedulable pods."""
    key = claim_key(claim)
    if parts.writes.busy(key):
        return  # an earlier attempt's deallocation is still being written
    handle = parts.handle

    async def write() -> None:
        try:
            answer = await deallocate(handle.api, claim, pod)
        except DeallocateError as error:
            handle.events.event(
                pod.raw,
                "Warning",
                EVENT_DEALLOCATION_FAILED,
                "Scheduling",
                f"deallocation of ResourceClaim failed: {error}",
            )
            await handle.clock.sleep(RETRY_AFTER_FAILED_DEALLOCATION_SECONDS)
            handle.activate([pod])
            return
        log.info(
            "DynamicResources: deallocation of ResourceClaim %s %s",
            key,
            "completed" if answer is not None else "not needed any more",
        )

    parts.writes.submit(key, f"deallocate claim {key}", write)
