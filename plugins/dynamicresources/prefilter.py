"""DynamicResources' PreFilter (upstream ``PreFilter``): what one pod's
scheduling attempt needs, computed once and written into its ``CycleData``.

Resolves the pod's claims (a claim not ready rejects the pod), appends the
extended-resource claim (found, or an in-memory placeholder) when the pod
requests extended resources a DeviceClass serves, records allocated claims'
node selectors and binding conditions for Filter, and, for every claim to
allocate, rejects it while another pod's allocation of it is in flight or
while it names a missing class. One ``Allocator`` over the devices in use
now serves every node of the cycle. Synchronous; reads the shared state,
writes only ``data``.
"""

from __future__ import annotations

from plugins.dynamicresources import extended as extended_claims
from plugins.dynamicresources.allocator import Allocator
from plugins.dynamicresources.bindingconditions import has_binding_conditions
from plugins.dynamicresources.claims import ClaimNotReady, pod_claims
from plugins.dynamicresources.cycledata import CycleData
from plugins.dynamicresources.inventory import validate_requests
from plugins.dynamicresources.model import ModelError, parse_claim
from plugins.dynamicresources.parts import Parts
from plugins.dynamicresources.state import allocation_of, claim_key, claim_uid
from scheduler.framework import Pod, Status
from scheduler.framework.deviceclasses import is_dra_extended_resource_name


def prepare(parts: Parts, data: CycleData, pod: Pod) -> Status | None:
    """Fill ``data``; Skip when the pod needs no DRA, else a rejection or None."""
    extended = extended_requests(parts, pod)
    if not pod.spec.get("resourceClaims") and not extended:
        return Status.skip()
    tracker, features = parts.tracker, parts.features
    try:
        data.claims = pod_claims(pod, tracker.get)
    except ClaimNotReady as error:
        return Status.unresolvable(str(error))
    if extended:
        data.extended = extended
        found = extended_claims.find_claim(pod, tracker.claims())
        data.extended_index = len(data.claims)
        data.claims.append(
            found
            if found is not None
            else extended_claims.placeholder(pod, f"{pod.uid}-extended-{id(data)}")
        )
    if not data.claims:
        return Status.skip()
    data.prioritized = any(
        request.get("firstAvailable")
        for claim in data.claims
        for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ()
    )
    for index, claim in enumerate(data.claims):
        allocation = allocation_of(claim)
        if allocation is not None:
            if allocation.get("nodeSelector") is not None:
                data.selectors[index] = allocation["nodeSelector"]
            if features.binding_conditions and has_binding_conditions(claim):
                data.conditioned.append(index)
            continue
        if index == data.extended_index:
            continue  # allocated per node in Filter
        if tracker.in_flight(claim_uid(claim)) is not None:
            return Status.unresolvable(
                f"resource claim {claim_key(claim)} is in the process of being allocated"
            )
        status = validate_requests(
            claim, parts.inventory.classes, prioritized_list=features.prioritized_list
        )
        if status is not None:
            return status
        try:
            data.parsed.append(parse_claim(claim))
        except ModelError as error:
            return Status.as_error(error)
        data.to_allocate.append(index)
    if data.to_allocate or (
        data.extended_index is not None and data.extended_index not in data.selectors
    ):
        inventory = parts.inventory
        data.allocator = Allocator(
            tracker.allocated_state(),
            inventory.classes,
            inventory.slices(),
            parts.cel,
            clock=parts.handle.clock.now,
            pool_cache=inventory.pools,
            features=features,
            first_fits=inventory.first_fits,
        )
    return None


def extended_requests(parts: Parts, pod: Pod) -> dict[str, int]:
    """Requested extended resources some DeviceClass serves (none
    without DRAExtendedResource)."""
    if not parts.features.extended_resource:
        return {}
    scalar = pod.requests.scalar
    classes = parts.extended
    if not scalar or not classes.any_backed(scalar):
        return {}
    return {
        name: value
        for name, value in scalar.items()
        if value and is_dra_extended_resource_name(name) and classes.class_for(name)
    }
