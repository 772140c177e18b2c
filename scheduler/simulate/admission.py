"""What the API server and its controllers add to objects that did not come
through them (a snapshot edited by hand, ``--pods`` files), so the scheduler
sees what it would see live. Pure: each function returns new objects.

- ``gated_condition``: the pod create strategy gives a gated pod
  ``PodScheduled=False`` reason ``SchedulingGated``.
- ``admit_priority``: the Priority admission plugin resolves
  ``priorityClassName`` (or the global default class) to ``spec.priority``.
- ``claims_from_templates``: the resourceclaim controller creates a pending
  pod's claims from its ``resourceClaimTemplateName`` entries, owned by the
  pod, and records them in ``status.resourceClaimStatuses``.
- ``NameGenerator``: ``generateName``, repeatable within a run.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from scheduler.kube.resources import RESOURCE_CLAIMS

Raw = dict[str, Any]
POD_SCHEDULED = "PodScheduled"
POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's generateName alphabet


def gated_condition(pod: Raw) -> Raw:
    if not (pod.get("spec") or {}).get("schedulingGates"):
        return pod
    status = dict(pod.get("status") or {})
    conditions = list(status.get("conditions") or ())
    if any(c.get("type") == POD_SCHEDULED for c in conditions):
        return pod
    conditions.append(
        {
            "type": POD_SCHEDULED,
            "status": "False",
            "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates",
        }
    )
    return {**pod, "status": {**status, "conditions": conditions}}


def admit_priority(pod: Raw, classes: Iterable[Mapping[str, Any]]) -> Raw:
    spec = pod.get("spec") or {}
    if spec.get("priority") is not None:
        return pod
    name = spec.get("priorityClassName")
    priority = 0
    for priority_class in classes:
        chosen = (
            (priority_class.get("metadata") or {}).get("name") == name
            if name
            else priority_class.get("globalDefault")
        )
        if chosen:
            priority = int(priority_class.get("value") or 0)
    return {**pod, "spec": {**spec, "priority": priority}} if priority else pod


class NameGenerator:
    """``generateName``: the prefix and 5 characters, the same on every run."""

    def __init__(self) -> None:
        self._count = 0

    def __call__(self, prefix: str) -> str:
        self._count += 1
        digest = hashlib.sha256(f"{prefix}{self._count}".encode()).digest()
        return prefix + "".join(_NAME_ALPHABET[b % len(_NAME_ALPHABET)] for b in digest[:5])


def claims_from_templates(
    pod: Raw, template: Callable[[str, str], Raw | None], names: NameGenerator
) -> tuple[Raw, list[Raw]]:
    """The pod with ``resourceClaimStatuses`` filled in, and the claims to
    create. A bound pod, or a template not in the snapshot, is left alone
    (the pod waits, as it would for the controller)."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return pod, []
    status = dict(pod.get("status") or {})
    statuses = list(status.get("resourceClaimStatuses") or ())
    recorded = {entry.get("name") for entry in statuses}
    namespace = str((pod.get("metadata") or {}).get("namespace") or "")
    claims: list[Raw] = []
    for entry in spec.get("resourceClaims") or ():
        template_name = entry.get("resourceClaimTemplateName")
        if not template_name or entry.get("name") in recorded:
            continue
        found = template(namespace, str(template_name))
        if found is None:
            continue
        claim = _claim(pod, str(entry.get("name")), found, names)
        claims.append(claim)
        statuses.append({"name": entry.get("name"), "resourceClaimName": claim["metadata"]["name"]})
    if not claims:
        return pod, []
    return {**pod, "status": {**status, "resourceClaimStatuses": statuses}}, claims


def _claim(pod: Raw, claim_name: str, template: Raw, names: NameGenerator) -> Raw:
    template_spec = template.get("spec") or {}
    metadata = dict(copy.deepcopy(template_spec.get("metadata") or {}))
    pod_metadata = pod.get("metadata") or {}
    metadata.update(
        {
            "name": names(f"{pod_metadata.get('name')}-{claim_name}-"),
            "namespace": pod_metadata.get("namespace"),
            "annotations": {**(metadata.get("annotations") or {}), POD_CLAIM_NAME: claim_name},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod_metadata.get("name"),
                    "uid": pod_metadata.get("uid"),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        }
    )
    return {
        "apiVersion": RESOURCE_CLAIMS.api_version,
        "kind": RESOURCE_CLAIMS.kind,
        "metadata": metadata,
        "spec": copy.deepcopy(template_spec.get("spec") or {}),
    }
