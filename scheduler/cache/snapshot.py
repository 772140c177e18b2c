"""The per-cycle snapshot: immutable NodeInfo clones, updated incrementally.

The cache copies into the snapshot only the NodeInfos whose generation is
newer than the snapshot's, so a cycle after one bind clones one node, not the
cluster. Nothing mutates a NodeInfo once it is in the snapshot: the snapshot
is replaced piecewise by the cache between cycles, never during one.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.framework.nodeinfo import NodeInfo


class Snapshot:
    """Implements ``scheduler.framework.SnapshotLister``."""

    __slots__ = ("generation", "node_info_list", "node_info_map", "positions", "with_affinity")

    def __init__(self) -> None:
        self.node_info_map: dict[str, NodeInfo] = {}
        self.node_info_list: list[NodeInfo] = []
        self.with_affinity: list[NodeInfo] = []
        self.positions: dict[str, int] = {}  # node name -> index in node_info_list
        self.generation = 0

    def node_infos(self) -> Sequence[NodeInfo]:
        return self.node_info_list

    def get(self, node_name: str) -> NodeInfo | None:
        return self.node_info_map.get(node_name)

    def have_pods_with_affinity(self) -> Sequence[NodeInfo]:
        return self.with_affinity

    def __len__(self) -> int:
        return len(self.node_info_list)
