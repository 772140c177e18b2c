"""Which ResourceClaims a pod uses (upstream ``resourceclaim.Name`` and
``IsForPod``, and the plugin's ``foreachPodResourceClaim``). Pure.

Rules: ``resourceClaimName`` names the claim directly (no owner check);
``resourceClaimTemplateName`` means the resourceclaim controller creates a
claim and records it in ``status.resourceClaimStatuses`` (an entry without
a name means "intentionally not created": skipped); that claim must be
controlled by the pod. A missing claim, one being deleted, or one owned by
someone else makes the pod wait, with upstream's message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from plugins.dynamicresources.model import Raw
from scheduler.framework import Pod

_EMPTY: Mapping[str, Any] = {}
FINALIZER = "resource.kubernetes.io/delete-protection"


class ClaimNotReady(Exception):
    """The pod cannot be scheduled until its claims exist as they should."""


def claim_names(pod: Pod) -> list[tuple[str, bool]]:
    """(claim name, must be owned by the pod) per claim the pod uses now."""
    statuses = {
        entry.get("name"): entry
        for entry in (pod.raw.get("status") or _EMPTY).get("resourceClaimStatuses") or ()
    }
    names = []
    for entry in pod.spec.get("resourceClaims") or ():
        if entry.get("resourceClaimName"):
            names.append((str(entry["resourceClaimName"]), False))
        elif entry.get("resourceClaimTemplateName"):
            status = statuses.get(entry.get("name"))
            if status is None:
                raise ClaimNotReady(
                    f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet'
                )
            if status.get("resourceClaimName"):
                names.append((str(status["resourceClaimName"]), True))
        else:
            raise ClaimNotReady(
                f'pod "{pod.namespace}/{pod.name}", spec.resourceClaim {entry.get("name")!r}: '
                "none of the supported fields are set"
            )
    return names


def may_use(pod: Pod, claim: Raw) -> bool:
    """Whether the pod names this claim at all (directly, or through its
    ``resourceClaimStatuses``): a cheap necessary condition for
    ``pod_claims`` to include it, without its not-ready checks."""
    metadata = claim.get("metadata") or _EMPTY
    if metadata.get("namespace", "") != pod.namespace:
        return False
    return metadata.get("name") in named_claims(pod)


def named_claims(pod: Pod) -> list[object]:
    """The claim names the pod states, in its own namespace: each
    ``resourceClaimName`` of its spec and of its ``resourceClaimStatuses``."""
    status = pod.raw.get("status")
    statuses = status.get("resourceClaimStatuses") if isinstance(status, Mapping) else None
    names: list[object] = []
    for entries in (pod.spec.get("resourceClaims"), statuses):
        if isinstance(entries, list):
            names += (
                entry.get("resourceClaimName") for entry in entries if isinstance(entry, Mapping)
            )
    return [name for name in names if name is not None]


def editable(claim: Raw) -> dict[str, Any]:
    """A copy of the claim whose ``metadata`` (and its ``finalizers``) and
    ``status`` (and its ``reservedFor``) may be changed in place; everything
    else is shared with the original, which is never mutated (informer and
    API objects are read-only by convention), so no deep copy is needed."""
    updated = dict(claim)
    metadata = dict(updated.get("metadata") or _EMPTY)
    if metadata.get("finalizers") is not None:
        metadata["finalizers"] = list(metadata["finalizers"])
    updated["metadata"] = metadata
    if "status" in updated:
        status = dict(updated["status"] or _EMPTY)
        if status.get("reservedFor") is not None:
            status["reservedFor"] = list(status["reservedFor"])
        updated["status"] = status
    return updated


def is_owned_by(claim: Raw, pod: Pod) -> bool:
    for owner in (claim.get("metadata") or _EMPTY).get("ownerReferences") or ():
        if owner.get("controller") and owner.get("uid") == pod.uid:
            return True
    return False


def pod_claims(pod: Pod, get: Callable[[str, str], Raw | None]) -> list[Raw]:
    """The pod's claims in spec order; raises ClaimNotReady."""
    claims = []
    for name, must_own in claim_names(pod):
        claim = get(pod.namespace, name)
        if claim is None:
            raise ClaimNotReady(f'resourceclaim.resource.k8s.io "{name}" not found')
        if (claim.get("metadata") or _EMPTY).get("deletionTimestamp"):
            raise ClaimNotReady(f'resourceclaim "{name}" is being deleted')
        if must_own and not is_owned_by(claim, pod):
            raise ClaimNotReady(
                f"ResourceClaim {pod.namespace}/{name} was not created for Pod "
                f"{pod.namespace}/{pod.name} (Pod is not owner)"
            )
        claims.append(claim)
    return claims


def reserved_for_pod(claim: Raw, pod: Pod) -> bool:
    return any(
        ref.get("uid") == pod.uid
        for ref in (claim.get("status") or _EMPTY).get("reservedFor") or ()
    )
