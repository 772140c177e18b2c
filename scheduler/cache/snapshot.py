"""The per-cycle snapshot: immutable NodeInfo clones, updated incrementally.

The cache copies into the snapshot only the NodeInfos whose generation is
newer than the snapshot's, so a cycle after one bind clones one node, not the
cluster. Nothing mutates a NodeInfo once it is in the snapshot: the snapshot
is replaced piecewise by the cache between cycles, never during one.

The journal lists, in order, the NodeInfos the cache put in place since the
journal's epoch began: while ``epoch`` is unchanged, the nodes are those of
the epoch's start with each journal entry replacing its name's NodeInfo (a
later entry superseding an earlier one). A node added or removed, a rebuilt
list, or a journal grown past its bound starts a new epoch with an empty
journal. Per-node sums kept across cycles (``scheduler.framework.tally``)
read it to recount only what changed without comparing every node.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.framework.nodeinfo import NodeInfo

# Entries a journal holds before a new epoch starts. The journal keeps the
# NodeInfos it lists alive, superseded ones too, so it stays short: a new
# epoch costs each tally one comparison of all nodes, about one cycle's worth.
JOURNAL_BOUND = 512


class Snapshot:
    """Implements ``scheduler.framework.SnapshotLister``."""

    __slots__ = (
        "epoch",
        "generation",
        "journal",
        "node_info_list",
        "node_info_map",
        "positions",
        "with_affinity",
    )

    def __init__(self) -> None:
        self.node_info_map: dict[str, NodeInfo] = {}
        self.node_info_list: list[NodeInfo] = []
        self.with_affinity: list[NodeInfo] = []
        self.positions: dict[str, int] = {}  # node name -> index in node_info_list
        self.generation = 0
        self.epoch = 0
        self.journal: list[NodeInfo] = []

    def record(self, changed: list[NodeInfo], *, restructured: bool) -> None:
        """Journal the NodeInfos just put in place, or start a new epoch when
        the node set changed or the journal would exceed ``JOURNAL_BOUND``."""
        if restructured or len(self.journal) + len(changed) > JOURNAL_BOUND:
            self.epoch += 1
            self.journal = []
        else:
            self.journal.extend(changed)

    def node_infos(self) -> Sequence[NodeInfo]:
        return self.node_info_list

    def get(self, node_name: str) -> NodeInfo | None:
        return self.node_info_map.get(node_name)

    def have_pods_with_affinity(self) -> Sequence[NodeInfo]:
        return self.with_affinity

    def __len__(self) -> int:
        return len(self.node_info_list)
