"""CycleData: what DynamicResources' PreFilter learned about one pod, read
by the rest of its scheduling attempt (upstream's ``stateData``).

Like upstream's, ``clone`` shares the object: Filter's per-node results are
kept across what-if copies on purpose. Written only by the scheduling cycle
(PreFilter through Reserve) and read by PreBind afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from plugins.dynamicresources.allocator import Allocator, Solution
from plugins.dynamicresources.model import Claim, Raw
from scheduler.framework import StateKey

NAME = "DynamicResources"

Allocations = list[dict[str, Any]]  # one ``status.allocation`` per claim to allocate


class NodeAllocations:
    """Filter's result per node: the allocations, or the allocator's
    ``Solution`` until someone reads them (Score with ``firstAvailable``
    requests, Reserve and PreBind for the chosen node only)."""

    __slots__ = ("_by_node",)

    def __init__(self) -> None:
        self._by_node: dict[str, Allocations | Solution] = {}

    def __setitem__(self, node_name: str, value: Allocations | Solution) -> None:
        self._by_node[node_name] = value

    def __contains__(self, node_name: object) -> bool:
        return node_name in self._by_node

    def get(self, node_name: str, default: Allocations | None = None) -> Allocations | None:
        value = self._by_node.get(node_name)
        if value is None:
            return default
        if isinstance(value, Solution):
            value = self._by_node[node_name] = value.results()
        return value

    def __getitem__(self, node_name: str) -> Allocations:
        value = self.get(node_name)
        if value is None:
            raise KeyError(node_name)
        return value


@dataclass(slots=True)
class CycleData:
    claims: list[Raw] = field(default_factory=list)
    # index into ``claims`` -> node selector of its existing allocation
    selectors: dict[int, Raw] = field(default_factory=dict)
    to_allocate: list[int] = field(default_factory=list)
    parsed: list[Claim] = field(default_factory=list)
    allocator: Allocator | None = None
    node_allocations: NodeAllocations = field(default_factory=NodeAllocations)
    # some claim has ``firstAvailable`` requests (else Score is 0 everywhere)
    prioritized: bool = False
    unavailable: set[int] = field(default_factory=set)
    # allocated claims whose devices have binding conditions
    conditioned: list[int] = field(default_factory=list)
    reserved_node: str = ""
    # extended resources backed by DeviceClasses: requested amounts, the
    # index of their claim in ``claims`` (placeholder or one made earlier)
    extended: dict[str, int] = field(default_factory=dict)
    extended_index: int | None = None
    # node -> (node-specific claim with its allocation, request mappings)
    node_extended: dict[str, tuple[dict[str, Any], list[dict[str, str]]]] = field(
        default_factory=dict
    )
    created_extended: Raw | None = None

    def extended_claim(self) -> Raw | None:
        return None if self.extended_index is None else self.claims[self.extended_index]

    def clone(self) -> CycleData:
        return self


STATE_KEY: StateKey[CycleData] = StateKey(NAME)
