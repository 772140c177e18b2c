"""Sums over all nodes of a per-node contribution, kept from cycle to cycle.

PreFilter and PreScore of the plugins that read other pods (PodTopologySpread,
InterPodAffinity) sum, over every node of the snapshot, something computed
from that node alone (the pods on it matching a selector, per topology
value). Between two cycles only a few nodes change, so a ``Tally`` keeps each
node's contribution with the NodeInfo it was computed from and the running
totals, and per cycle recomputes only the nodes whose NodeInfo is not that
same object at the same generation (the cache's snapshot replaces a changed
node's NodeInfo by a fresh clone and stamps a new generation on it). The
NodeInfo objects already seen in the previous call are passed over by a set
difference (in C), so an unchanged cluster costs almost nothing per cycle,
whatever the order or the subset of nodes passed.

A contribution is a tuple of ``(slot, key, count)``: ``totals[slot][key]`` is
the sum of the counts of ``key`` in that slot over the nodes, and a key is
present exactly while at least one node contributes it (even with count 0),
so "no key" still means "no node contributed".

With the snapshot's journal (``journal_of``: its epoch and the NodeInfos put
in place since the epoch began, see ``scheduler.cache.snapshot``) a tally
last brought up to date in the same epoch recounts just the journal's new
entries and does not look at the other nodes at all. That is only valid
when ``nodes`` is the snapshot's own list, or the list of the snapshot's
nodes whose contribution can be non-empty (``have_pods_with_affinity`` for a
contribution that is empty without pods with affinity): the caller vouches
for it by passing the journal.

Invariants: after ``update(nodes)`` the totals equal a fresh sum over
``nodes`` (nodes gone since the last call are subtracted); the contribution
function must depend only on the NodeInfo (and on what the owner keyed the
tally by). A NodeInfo object mutated in place is not noticed: only the
cache's snapshot NodeInfos (never changed once in the snapshot) may be
tallied.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

from scheduler.framework.nodeinfo import NodeInfo

K = TypeVar("K", bound=Hashable)

Contribution = tuple[tuple[int, K, int], ...]
# A snapshot's journal: (epoch, NodeInfos put in place since the epoch began).
Journal = tuple[int, Sequence[NodeInfo]]


def journal_of(snapshot: object) -> Journal | None:
    """The journal of ``scheduler.cache.Snapshot`` (None for a snapshot
    without one, such as the tests' fakes: then tallies compare nodes)."""
    journal: Sequence[NodeInfo] | None = getattr(snapshot, "journal", None)
    if journal is None:
        return None
    epoch: int = getattr(snapshot, "epoch", 0)
    return epoch, journal


class Tally(Generic[K]):
    """Running per-slot totals of ``contribution(node_info)`` over the nodes."""

    __slots__ = ("_contribution", "_epoch", "_last", "_members", "_position", "_seen", "totals")

    def __init__(self, slots: int, contribution: Callable[[NodeInfo], Contribution[K]]) -> None:
        self._contribution = contribution
        self._seen: dict[str, tuple[NodeInfo, int, Contribution[K]]] = {}
        self._last: set[NodeInfo] = set()  # the NodeInfo objects of the last update
        self.totals: list[dict[K, int]] = [{} for _ in range(slots)]
        self._members: list[dict[K, int]] = [{} for _ in range(slots)]
        # The snapshot journal's epoch and length at the last update (epoch
        # None: that update had no journal).
        self._epoch: int | None = None
        self._position = 0

    def update(
        self, nodes: Sequence[NodeInfo], journal: Journal | None = None
    ) -> list[dict[K, int]]:
        """Bring the totals up to ``nodes`` and return them (owned by the
        tally: copy before changing them). ``journal``: the snapshot's, when
        ``nodes`` is the snapshot's list (see the module docstring)."""
        if journal is not None:
            epoch, entries = journal
            if epoch == self._epoch:
                refresh = self._refresh
                for info in entries[self._position :]:
                    refresh(info)
                self._position = len(entries)
                return self.totals
        # NodeInfo objects not in the last call's nodes, found without a
        # Python-level loop over the others (NodeInfo hashes by identity).
        current = set(nodes)
        for info in current - self._last:
            self._refresh(info)
        self._last = current
        if len(self._seen) != len(nodes):
            self._forget_others(nodes)
        if journal is None:
            self._epoch = None
        else:
            self._epoch, self._position = journal[0], len(journal[1])
        return self.totals

    def _refresh(self, info: NodeInfo) -> None:
        seen = self._seen
        entry = seen.get(info.name)
        if entry is not None and entry[0] is info and entry[1] == info.generation:
            return
        fresh = self._contribution(info)
        if entry is not None and entry[2] != fresh:
            self._apply(entry[2], -1)
            self._apply(fresh, 1)
        elif entry is None:
            self._apply(fresh, 1)
        seen[info.name] = (info, info.generation, fresh)

    def _forget_others(self, nodes: Sequence[NodeInfo]) -> None:
        present = {info.name for info in nodes}
        for name in [name for name in self._seen if name not in present]:
            self._apply(self._seen.pop(name)[2], -1)

    def _apply(self, contribution: Contribution[K], sign: int) -> None:
        for slot, key, count in contribution:
            totals, members = self.totals[slot], self._members[slot]
            left = members.get(key, 0) + sign
            if left:
                members[key] = left
                totals[key] = totals.get(key, 0) + sign * count
            else:
                del members[key]
                del totals[key]


class Tallies(Generic[K]):
    """The tallies of one plugin, by what their contribution depends on (the
    most recently used few: a pod template's cycles reuse one)."""

    def __init__(self, max_tallies: int = 8) -> None:
        self._tallies: OrderedDict[Hashable, Tally[K]] = OrderedDict()
        self._max = max_tallies

    def get(
        self, key: Hashable, slots: int, contribution: Callable[[NodeInfo], Contribution[K]]
    ) -> Tally[K]:
        """The tally for ``key``, made with ``contribution`` if there is none."""
        tally = self._tallies.get(key)
        if tally is None:
            tally = self._tallies[key] = Tally(slots, contribution)
            while len(self._tallies) > self._max:
                self._tallies.popitem(last=False)
        else:
            self._tallies.move_to_end(key)
        return tally

    def clear(self) -> None:
        self._tallies.clear()
