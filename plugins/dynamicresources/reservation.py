"""DynamicResources' Reserve and Unreserve (upstream ``Reserve``,
``Unreserve``): the in-flight allocations, with no API call in Reserve.

Reserve turns the chosen node's allocations into in-flight claims (a copy
with the finalizer and ``status.allocation``), so other pods' PreFilter see
those devices in use and the claims as being allocated. Unreserve drops
them, restores the tracker's informer version of each claim, deletes an
extended-resource claim PreBind created, and, in the background, takes the
pod out of ``reservedFor`` of every allocated claim reserved for it.
Symmetric: what Reserve signals, Unreserve removes; both synchronous.
"""

from __future__ import annotations

import copy

from plugins.dynamicresources import extended as extended_claims
from plugins.dynamicresources.claims import FINALIZER, editable, reserved_for_pod
from plugins.dynamicresources.cycledata import CycleData
from plugins.dynamicresources.model import Raw
from plugins.dynamicresources.parts import Parts
from plugins.dynamicresources.state import allocation_of, claim_key, claim_uid
from plugins.dynamicresources.writes import delete_claim, unreserve
from scheduler.framework import ApiWriter, Pod, Status


def reserve(parts: Parts, data: CycleData, node_name: str) -> Status | None:
    tracker = parts.tracker
    extended = data.node_extended.get(node_name)
    if extended is not None:
        claim = copy.deepcopy(extended[0])
        claim["metadata"].setdefault("finalizers", []).append(FINALIZER)
        tracker.signal_in_flight(claim_uid(claim), claim)
    if not data.to_allocate:
        data.reserved_node = node_name
        return None
    allocations = data.node_allocations.get(node_name)
    if allocations is None or len(allocations) != len(data.to_allocate):
        return Status.as_error("claim allocation not found for node")
    for index, allocation in zip(data.to_allocate, allocations, strict=True):
        claim = editable(data.claims[index])
        finalizers = claim.setdefault("metadata", {}).setdefault("finalizers", [])
        if FINALIZER not in finalizers:
            finalizers.append(FINALIZER)
        claim.setdefault("status", {})["allocation"] = allocation
        tracker.signal_in_flight(claim_uid(claim), claim)
    data.reserved_node = node_name
    return None


def unreserve_claims(parts: Parts, data: CycleData, pod: Pod, node_name: str) -> None:
    tracker, writes, api = parts.tracker, parts.writes, parts.handle.api
    extended = data.node_extended.get(node_name)
    if extended is not None:
        tracker.remove_in_flight(claim_uid(extended[0]))
    created = data.created_extended
    if created is not None:
        data.created_extended = None

        async def delete(claim: Raw = created, api: ApiWriter = api) -> None:
            await delete_claim(api, claim)

        writes.submit(claim_key(created), f"delete claim {claim_key(created)}", delete)
    for index, claim in enumerate(data.claims):
        if index == data.extended_index and extended_claims.is_placeholder(claim):
            continue
        if index in data.to_allocate and tracker.remove_in_flight(claim_uid(claim)):
            metadata = claim.get("metadata") or {}
            tracker.restore(metadata.get("namespace", ""), metadata.get("name", ""))
        namespace, name = claim_key(claim).split("/", 1)
        current = tracker.get(namespace, name) or claim
        if allocation_of(current) is not None and reserved_for_pod(current, pod):

            async def write(current: Raw = current, api: ApiWriter = api) -> None:
                answer = await unreserve(api, current, pod)
                if answer.get("metadata"):
                    tracker.assume(answer)

            key = claim_key(current)
            writes.submit(key, f"unreserve claim {key}", write)
