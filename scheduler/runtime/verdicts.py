"""Reuse of node-local plugin results across cycles (an upstream-style
"signature" optimization, cf. SignPlugin in kube-scheduler 1.35+).

A plugin that implements ``SignPlugin`` promises that its Filter status and
its raw Score (before NormalizeScore) for a node depend only on the pod's
signature fragment and on that node's NodeInfo. When every Filter plugin of
the cycle signs the pod, the Filter status of a node whose NodeInfo has not
changed (same generation) since it was computed for an equal signature is
reused instead of recomputed; likewise raw scores when every Score plugin
signs. When only some sign (InterPodAffinity or PodTopologySpread active),
the signing plugins' part is reused the same way and the others run fresh
for every node (``filtering.PartialFilterVerdicts``,
``ScoringPoints._partially_reused_scores``); a table's signature names its
plugins, so both uses share the tables. NormalizeScore, weights and
selection still run every cycle, so the outcome is exactly what recomputing
would give.

Cycles sampled for plugin metrics use it too: they measure the plugin calls
that really run. Never used for what-if NodeInfo copies (only the snapshot's
NodeInfos carry the generation the cache checks).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class VerdictCache(Generic[V]):
    """Tables of per-node results for the most recent pod signatures (LRU)."""

    def __init__(self, max_signatures: int = 8) -> None:
        self._tables: OrderedDict[Hashable, dict[str, tuple[int, V]]] = OrderedDict()
        self._max = max_signatures

    def table(self, signature: Hashable, max_entries: int) -> dict[str, tuple[int, V]]:
        """The table for ``signature``; emptied when it outgrows ``max_entries``
        (entries of deleted nodes would otherwise pile up)."""
        table = self._tables.get(signature)
        if table is not None and len(table) > max_entries:
            table.clear()
        if table is None:
            table = self._tables[signature] = {}
            while len(self._tables) > self._max:
                self._tables.popitem(last=False)
        else:
            self._tables.move_to_end(signature)
        return table

    def clear(self) -> None:
        self._tables.clear()

    def __len__(self) -> int:
        return len(self._tables)
