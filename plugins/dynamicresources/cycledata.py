"""CycleData: what DynamicResources' PreFilter learned about one pod, read
by the rest of its scheduling attempt (upstream's ``stateData``).

Like upstream's, ``clone`` shares the object: Filter's per-node results are
kept across what-if copies on purpose. Written only by the scheduling cycle
(PreFilter through Reserve) and read by PreBind afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from plugins.dynamicresources.allocator import Allocator
from plugins.dynamicresources.model import Claim, Raw
from scheduler.framework import StateKey

NAME = "DynamicResources"


@dataclass(slots=True)
class CycleData:
    claims: list[Raw] = field(default_factory=list)
    # index into ``claims`` -> node selector of its existing allocation
    selectors: dict[int, Raw] = field(default_factory=dict)
    to_allocate: list[int] = field(default_factory=list)
    parsed: list[Claim] = field(default_factory=list)
    allocator: Allocator | None = None
    node_allocations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
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
