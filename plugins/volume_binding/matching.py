"""Matching claims to existing volumes (upstream ``FindMatchingVolume`` and
``GetBindVolumeToClaim``), pure functions over raw API dicts.

Invariants: inputs are never mutated (``bind_volume_to_claim`` and
``with_annotation`` return deep copies); a volume already bound to the claim
wins over any other; otherwise the smallest fitting available volume.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.framework import Node, QuantityError
from scheduler.framework.labels import LabelSelectorError, parse_label_selector
from scheduler.framework.volumes import (
    ANN_BOUND_BY_CONTROLLER,
    VOLUME_AVAILABLE,
    access_modes,
    annotations_of,
    claim_class,
    is_volume_bound_to_claim,
    meta,
    name_of,
    pv_node_affinity_matches,
    spec,
    storage_capacity,
    storage_request,
    volume_class,
)

Raw = Mapping[str, Any]


class MatchError(Exception):
    """The claim's selector can't be converted (an Error, as upstream)."""


def claim_key(pvc: Raw) -> str:
    metadata = meta(pvc)
    return f"{metadata.get('namespace')}/{metadata.get('name')}"


def requested_bytes(claim: Raw) -> int:
    try:
        return storage_request(claim)
    except QuantityError:
        return 0


def _volume_mode(obj: Raw) -> str:
    return str(spec(obj).get("volumeMode") or "Filesystem")


def find_matching_volume(
    claim: Raw, volumes: Sequence[Raw], node: Node, excluded: set[str]
) -> Raw | None:
    """Upstream ``FindMatchingVolume`` with delayed binding and a node: a
    volume already bound to the claim if it allows the node, else the
    smallest available volume of the claim's class that is big enough, has the
    same volume mode and attributes class, matches the claim's selector, allows
    the node and offers every access mode the claim asks for."""
    requested = requested_bytes(claim)
    requested_class = claim_class(claim)
    claim_spec = spec(claim)
    raw_selector = claim_spec.get("selector")
    try:
        selector = parse_label_selector(raw_selector) if raw_selector is not None else None
    except LabelSelectorError as error:
        raise MatchError(
            f"error creating internal label selector for claim: {claim_key(claim)}: {error}"
        ) from None
    smallest: Raw | None = None
    smallest_size = 0
    for pv in volumes:
        if name_of(pv) in excluded:
            continue
        bound_to_claim = is_volume_bound_to_claim(pv, claim)
        if spec(pv).get("claimRef") is not None and not bound_to_claim:
            continue
        size = storage_capacity(pv)
        if size < requested:
            continue
        if _volume_mode(claim) != _volume_mode(pv):
            continue
        if (claim_spec.get("volumeAttributesClassName") or "") != (
            spec(pv).get("volumeAttributesClassName") or ""
        ):
            continue
        if meta(pv).get("deletionTimestamp"):
            continue
        affinity_ok = pv_node_affinity_matches(pv, node.labels)
        if bound_to_claim:
            return pv if affinity_ok else None
        if (pv.get("status") or {}).get("phase") != VOLUME_AVAILABLE:
            continue
        if selector is not None and not selector.matches(meta(pv).get("labels") or {}):
            continue
        if volume_class(pv) != requested_class:
            continue
        if not affinity_ok:
            continue
        if not set(access_modes(claim)) <= set(access_modes(pv)):
            continue
        if smallest is None or smallest_size > size:
            smallest, smallest_size = pv, size
    return smallest


def with_annotation(obj: Raw, key: str, value: str) -> dict[str, Any]:
    """A deep copy of ``obj`` with one annotation set."""
    clone: dict[str, Any] = copy.deepcopy(dict(obj))
    metadata = clone.setdefault("metadata", {})
    metadata["annotations"] = {**(metadata.get("annotations") or {}), key: value}
    return clone


def bind_volume_to_claim(pv: Raw, claim: Raw) -> tuple[Raw, bool]:
    """Upstream ``GetBindVolumeToClaim``: the volume with its claimRef set to
    the claim (and bound-by-controller when it was not pre-bound), and
    whether anything changed."""
    already_bound = is_volume_bound_to_claim(pv, claim)
    clone: dict[str, Any] = copy.deepcopy(dict(pv))
    dirty = False
    claim_meta = meta(claim)
    ref = spec(pv).get("claimRef")
    if (
        ref is None
        or ref.get("name") != claim_meta.get("name")
        or ref.get("namespace") != claim_meta.get("namespace")
        or ref.get("uid") != claim_meta.get("uid")
    ):
        clone.setdefault("spec", {})["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "namespace": claim_meta.get("namespace"),
            "name": claim_meta.get("name"),
            "uid": claim_meta.get("uid"),
            "apiVersion": "v1",
            "resourceVersion": claim_meta.get("resourceVersion"),
        }
        dirty = True
    if not already_bound and ANN_BOUND_BY_CONTROLLER not in annotations_of(clone):
        metadata = clone.setdefault("metadata", {})
        metadata["annotations"] = {
            **(metadata.get("annotations") or {}),
            ANN_BOUND_BY_CONTROLLER: "yes",
        }
        dirty = True
    return clone, dirty
