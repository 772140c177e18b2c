"""The allocation result of one claim, in the API's form (upstream's tail of
``Allocate``). Pure.

- ``devices.results``: one entry per device in allocation order, with the
  request (``req`` or ``req/sub``), admin access, the request's tolerations,
  the device's binding conditions, and for shared devices the shareID and
  consumed capacity;
- ``devices.config``: first each class's config (``FromClass``) once per
  distinct class, in request order, listing every request using it; then
  each claim config (``FromClaim``) that applies: all of them when it names
  no request, else once per request it names (or the chosen subrequest it
  names), duplicates included, as upstream 1.36 does;
- ``nodeSelector``: the node alone if any device is node-local (slice or
  device ``nodeName``, or ``bindsToNode``); else the union of the slices'
  single-term selectors; none when every device is usable everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from plugins.dynamicresources.model import (
    Claim,
    Device,
    DeviceClass,
    Request,
    Slice,
    format_quantity,
)
from plugins.dynamicresources.nodeselector import local_node_selector


@dataclass(slots=True)
class Picked:
    """One device the search took for a request."""

    device: Device
    slice: Slice
    request: Request
    share_id: str = ""
    consumed: dict[str, Decimal] | None = None


# request index -> the request (or chosen subrequest) and its class
Chosen = Callable[[int], tuple[Request, DeviceClass]]


def allocation_result(
    claim: Claim, picked: Sequence[Picked], chosen: Chosen, selector: dict[str, Any] | None
) -> dict[str, Any]:
    """``selector``: ``node_selector``'s answer for the same picks (computed
    first, as it is the part that can fail)."""
    allocation: dict[str, Any] = {"devices": {"results": [_entry(p) for p in picked]}}
    config = config_entries(claim, chosen)
    if config:
        allocation["devices"]["config"] = config
    if selector is not None:
        allocation["nodeSelector"] = selector
    return allocation


def _entry(picked: Picked) -> dict[str, Any]:
    request, device = picked.request, picked.device
    entry: dict[str, Any] = {
        "request": request.full_name,
        "driver": device.id[0],
        "pool": device.id[1],
        "device": device.id[2],
    }
    if request.admin_access:
        entry["adminAccess"] = True
    if request.raw_tolerations:
        entry["tolerations"] = [dict(t) for t in request.raw_tolerations]
    if device.binding_conditions:
        entry["bindingConditions"] = list(device.binding_conditions)
    if device.binding_failure_conditions:
        entry["bindingFailureConditions"] = list(device.binding_failure_conditions)
    if picked.share_id:
        entry["shareID"] = picked.share_id
    if picked.consumed:
        entry["consumedCapacity"] = {
            name: format_quantity(value) for name, value in picked.consumed.items()
        }
    return entry


def config_entries(claim: Claim, chosen: Chosen) -> list[dict[str, Any]]:
    config: list[dict[str, Any]] = []
    by_class: dict[str, range] = {}
    for request_index in range(len(claim.requests)):
        request, device_class = chosen(request_index)
        name = request.full_name
        held = by_class.get(device_class.name)
        if held is not None:
            for i in held:
                config[i]["requests"].append(name)
            continue
        begin = len(config)
        for entry in device_class.config:
            config.append({"source": "FromClass", "requests": [name], **_configuration(entry)})
        by_class[device_class.name] = range(begin, len(config))
    for entry in claim.config:
        names = list(entry.get("requests") or ())
        if not names:
            config.append({"source": "FromClaim", **_configuration(entry)})
            continue
        for request_index, claim_request in enumerate(claim.requests):
            if claim_request.name in names or (
                claim_request.first_available and chosen(request_index)[0].full_name in names
            ):
                config.append({"source": "FromClaim", "requests": names, **_configuration(entry)})
    return config


def node_selector(
    claim: Claim, picked: Sequence[Picked], node_name: str, *, build: bool = True
) -> dict[str, Any] | None:
    """Raises ValueError for a slice selector upstream cannot combine;
    ``build=False`` only checks that (and returns None)."""
    fields: list[Mapping[str, Any]] = []
    expressions: list[Mapping[str, Any]] = []
    for item in picked:
        slice_, device = item.slice, item.device
        if slice_.per_device_node_selection:
            local, selector = device.node_name, device.node_selector
        else:
            local, selector = slice_.node_name, slice_.node_selector
        if local or device.binds_to_node:
            return local_node_selector(node_name) if build else None
        if selector is not None:
            terms = selector.get("nodeSelectorTerms") or ()
            if len(terms) > 1:
                raise ValueError(
                    f"create NodeSelector for claim {claim.name}: unsupported "
                    f"ResourceSlice.NodeSelector with {len(terms)} terms"
                )
            if terms and build:
                _add_requirements(terms[0].get("matchFields") or (), fields)
                _add_requirements(terms[0].get("matchExpressions") or (), expressions)
    if not fields and not expressions:
        return None
    term: dict[str, Any] = {}
    if expressions:
        term["matchExpressions"] = [dict(r) for r in expressions]
    if fields:
        term["matchFields"] = [dict(r) for r in fields]
    return {"nodeSelectorTerms": [term]}


def _configuration(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The DeviceConfiguration part of a class or claim config entry."""
    return {"opaque": entry["opaque"]} if "opaque" in entry else {}


def _add_requirements(source: Sequence[Mapping[str, Any]], target: list[Mapping[str, Any]]) -> None:
    for requirement in source:
        values = set(requirement.get("values") or ())
        if not any(
            held.get("key") == requirement.get("key")
            and held.get("operator") == requirement.get("operator")
            and set(held.get("values") or ()) == values
            for held in target
        ):
            target.append(requirement)
