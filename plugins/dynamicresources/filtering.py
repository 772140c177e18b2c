"""DynamicResources' Filter on one node (upstream ``Filter`` and
``filterExtendedResources``).

An allocated claim must allow the node: its allocation's node selector
matches, and its binding conditions have neither failed nor timed out;
otherwise the node is unavailable for it (PostFilter may deallocate it).
The other claims, with the node's own extended-resource claim when the node
does not advertise those resources, are allocated by the cycle's
``Allocator`` under ``filterTimeout``; the result is kept per node for
Score, Reserve and PreBind. A broken claim or class is an Error (the whole
attempt fails), an invalid pool only this node's rejection. Synchronous.
"""

from __future__ import annotations

from typing import Any

from plugins.dynamicresources import extended as extended_claims
from plugins.dynamicresources.allocator import (
    AllocationError,
    AllocationTimeout,
    NodeAllocationError,
    Solution,
)
from plugins.dynamicresources.bindingconditions import Binding, binding_state
from plugins.dynamicresources.cycledata import CycleData
from plugins.dynamicresources.model import ModelError, parse_claim
from plugins.dynamicresources.nodeselector import node_selector_matches
from plugins.dynamicresources.parts import Parts
from plugins.dynamicresources.reasons import (
    CANNOT_ALLOCATE,
    NOT_AVAILABLE,
    REASON_STALE_EXTENDED_CLAIM,
)
from plugins.dynamicresources.state import allocation_of
from scheduler.framework import NodeInfo, Pod, Status

ExtendedClaim = tuple[dict[str, Any], list[dict[str, str]]]  # the claim, its mappings


def filter_node(parts: Parts, data: CycleData, pod: Pod, node_info: NodeInfo) -> Status | None:
    node = node_info.node
    if node is None:
        return Status.as_error("node not found")
    clock, args = parts.handle.clock, parts.args
    unavailable = {
        index
        for index, selector in data.selectors.items()
        if not node_selector_matches(selector, node.name, node.labels)
    }
    for index in data.conditioned:
        state_ = binding_state(data.claims[index], clock.wall(), args.binding_timeout)
        if state_ in (Binding.FAILED, Binding.TIMED_OUT):
            unavailable.add(index)
    claims = data.parsed
    extended: ExtendedClaim | None = None
    if data.extended_index is not None:
        status, extended = _extended_for_node(parts, data, pod, node_info)
        if status is not None:
            return status
        if extended is not None:
            try:
                claims = [*data.parsed, parse_claim(extended[0])]
            except ModelError as error:
                return Status.as_error(error)
    solution: Solution | None = None
    if data.allocator is not None and claims:
        timeout = args.filter_timeout if parts.features.filter_timeout else 0
        deadline = clock.now() + timeout if timeout > 0 else None
        try:
            solution = data.allocator.solve(node.name, node.labels, claims, deadline)
        except AllocationTimeout as error:
            return Status.as_error(error)
        except NodeAllocationError as error:
            return Status.unresolvable(str(error))
        except AllocationError as error:
            return Status.as_error(error)
        if solution is None:
            return CANNOT_ALLOCATE
    if unavailable:
        data.unavailable |= unavailable
        return NOT_AVAILABLE
    if extended is not None:
        results = [*solution.results()] if solution is not None else []
        claim, mappings = extended
        claim.setdefault("status", {})["allocation"] = results.pop()
        data.node_extended[node.name] = (claim, mappings)
        data.node_allocations[node.name] = results
        return None
    if data.node_extended:
        data.node_extended.pop(node.name, None)
    data.node_allocations[node.name] = solution if solution is not None else []
    return None


def _extended_for_node(
    parts: Parts, data: CycleData, pod: Pod, node_info: NodeInfo
) -> tuple[Status | None, ExtendedClaim | None]:
    """The node-specific extended-resource claim, if this node needs one
    (upstream ``filterExtendedResources``)."""
    claim = data.extended_claim()
    assert claim is not None
    if ((claim.get("spec") or {}).get("devices") or {}).get("requests"):
        return Status.unresolvable(REASON_STALE_EXTENDED_CLAIM), None
    needed = []
    for name in data.extended:
        allocatable = node_info.allocatable.scalar.get(name)
        if allocatable is None or allocatable == 0:
            needed.append(name)
    if not needed or allocation_of(claim) is not None:
        return None, None
    requests, mappings = extended_claims.requests_and_mappings(pod, needed, parts.extended)
    return None, (extended_claims.with_requests(claim, requests), mappings)
