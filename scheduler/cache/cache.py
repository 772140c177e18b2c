"""The scheduler cache: every node and every pod assigned to one.

It counts every non-terminal pod bound to a node, whoever scheduled it, and
the pods this scheduler has *assumed* (placed in the scheduling cycle, not yet
confirmed by the informer). Assume and forget are symmetric; an assumed pod
stays until the informer delivers it bound (confirm) or the binding cycle
fails (forget). Pods are keyed by UID.

Invariants:
- Each NodeInfo's ``requested`` is the sum over its pods (NodeInfo keeps it).
- A node deleted while pods are still on it stays as a ghost (``node`` None)
  until those pods are gone; ghosts are never in a snapshot.
- Every change bumps the global generation and stamps it on the changed
  NodeInfo, so ``update_snapshot`` copies only what changed since last time.
- Terminal pods (Succeeded, Failed) hold no resources: they are removed.
- Each assumed pod has the (monotonic) time it was assumed, for the cache
  comparer's "assumed for too long" check (``dump``).
"""

from __future__ import annotations

import logging
from bisect import bisect_left
from collections import OrderedDict

from scheduler.cache.dump import CacheDump
from scheduler.cache.node_tree import NodeTree
from scheduler.cache.snapshot import Snapshot
from scheduler.framework.clock import Clock, RealClock
from scheduler.framework.nodeinfo import NodeInfo
from scheduler.framework.objects import Node, Pod

log = logging.getLogger(__name__)


class CacheError(Exception):
    """An assume/forget that contradicts the cache's state."""


class Cache:
    def __init__(self, clock: Clock | None = None) -> None:
        self._clock = clock or RealClock()
        self._nodes: dict[str, NodeInfo] = {}
        self._recent: OrderedDict[str, None] = OrderedDict()  # least recent first
        self._deleted: dict[str, int] = {}  # node name -> generation of deletion
        self._tree = NodeTree()
        self._pods: dict[str, Pod] = {}
        self._assumed: set[str] = set()
        self._assumed_since: dict[str, float] = {}  # uid -> clock.now() at assume
        self._generation = 0
        self._structure_generation = 0  # last node add/remove/zone change

    # ----------------------------------------------------------- bookkeeping
    def _touch(self, name: str) -> NodeInfo:
        self._generation += 1
        info = self._nodes.get(name)
        if info is None:
            info = NodeInfo(None, self._generation)
            self._nodes[name] = info
        info.generation = self._generation
        self._recent[name] = None
        self._recent.move_to_end(name)
        self._deleted.pop(name, None)
        return info

    def _drop_if_empty_ghost(self, name: str) -> None:
        info = self._nodes.get(name)
        if info is not None and info.node is None and not info.pods:
            del self._nodes[name]
            self._recent.pop(name, None)
            self._deleted[name] = self._generation

    # ----------------------------------------------------------------- nodes
    def add_node(self, node: Node) -> None:
        """A new node, or a new version of a known one (a relist may deliver
        either as an add)."""
        info = self._touch(node.name)
        became_visible = info.node is None
        info.node = node
        moved = self._tree.add(node.name, node.labels)
        if became_visible or moved:  # the snapshot's node order changes
            self._structure_generation = self._generation

    def update_node(self, node: Node) -> None:
        self.add_node(node)

    def remove_node(self, name: str) -> None:
        info = self._nodes.get(name)
        if info is None:
            return
        self._tree.remove(name)
        self._touch(name).node = None
        self._structure_generation = self._generation
        self._deleted[name] = self._generation
        self._drop_if_empty_ghost(name)

    # ------------------------------------------------------------------ pods
    def add_pod(self, pod: Pod) -> None:
        """An assigned pod seen by the informer (new, or confirming an assumed one)."""
        if pod.terminal:
            self.remove_pod(pod)
            return
        stored = self._pods.get(pod.uid)
        if stored is not None:
            if pod.uid in self._assumed:
                self._assumed.discard(pod.uid)
                self._assumed_since.pop(pod.uid, None)
                if stored.node_name != pod.node_name:
                    log.warning(
                        "pod %s was assumed on %s but bound to %s",
                        pod.key,
                        stored.node_name,
                        pod.node_name,
                    )
            self._remove_from_node(stored)
        self._pods[pod.uid] = pod
        self._touch(pod.node_name).add_pod(pod)

    def update_pod(self, pod: Pod) -> None:
        self.add_pod(pod)

    def remove_pod(self, pod: Pod) -> None:
        stored = self._pods.pop(pod.uid, None)
        self._assumed.discard(pod.uid)
        self._assumed_since.pop(pod.uid, None)
        if stored is not None:
            self._remove_from_node(stored)

    def _remove_from_node(self, stored: Pod) -> None:
        if stored.node_name in self._nodes:
            self._touch(stored.node_name).remove_pod(stored)
            self._drop_if_empty_ghost(stored.node_name)

    def assume_pod(self, pod: Pod) -> None:
        """``pod`` has ``node_name`` set to the chosen node."""
        if pod.uid in self._pods:
            raise CacheError(f"pod {pod.key} ({pod.uid}) is already in the cache")
        self._pods[pod.uid] = pod
        self._assumed.add(pod.uid)
        self._assumed_since[pod.uid] = self._clock.now()
        self._touch(pod.node_name).add_pod(pod)

    def forget_pod(self, pod: Pod) -> None:
        stored = self._pods.get(pod.uid)
        if stored is None or pod.uid not in self._assumed:
            raise CacheError(f"pod {pod.key} ({pod.uid}) is not assumed")
        if stored.node_name != pod.node_name:
            raise CacheError(
                f"pod {pod.key} was assumed on {stored.node_name}, not {pod.node_name}"
            )
        self.remove_pod(stored)

    def is_assumed(self, uid: str) -> bool:
        return uid in self._assumed

    def get_pod(self, uid: str) -> Pod | None:
        return self._pods.get(uid)

    # ------------------------------------------------------------ inspection
    @property
    def generation(self) -> int:
        return self._generation

    def node_count(self) -> int:
        return len(self._tree)

    def pod_count(self) -> int:
        return len(self._pods)

    def assumed_count(self) -> int:
        return len(self._assumed)

    def node_info(self, name: str) -> NodeInfo | None:
        return self._nodes.get(name)

    def assumed_pods(self) -> list[Pod]:
        return [self._pods[uid] for uid in self._assumed]

    def dump(self) -> CacheDump:
        """A copy of every NodeInfo (ghosts included) and of the assumed pods'
        assume times, for the cache comparer; later changes do not show in it."""
        return CacheDump(
            nodes={name: info.clone() for name, info in self._nodes.items()},
            assumed_since={uid: self._assumed_since.get(uid, 0.0) for uid in self._assumed},
        )

    # -------------------------------------------------------------- snapshot
    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Bring ``snapshot`` up to date, copying only what changed."""
        since = snapshot.generation
        if since == self._generation:
            return
        changed: list[NodeInfo] = []
        # (clone, had pods with affinity, has them) for the with-affinity list
        affine: list[tuple[NodeInfo, bool, bool]] = []
        affinity_flipped = False
        removed = False  # or added: the node set changed
        for name in reversed(self._recent):
            info = self._nodes[name]
            if info.generation <= since:
                break
            previous = snapshot.node_info_map.get(name)
            if info.node is None:
                removed = snapshot.node_info_map.pop(name, None) is not None or removed
                continue
            clone = info.clone()
            removed = removed or previous is None  # a node new to the snapshot
            snapshot.node_info_map[name] = clone
            changed.append(clone)
            had = bool(previous and previous.pods_with_affinity)
            has = bool(clone.pods_with_affinity)
            if had or has:
                affine.append((clone, had, has))
        for name, generation in list(self._deleted.items()):
            if generation > since:
                removed = snapshot.node_info_map.pop(name, None) is not None or removed
            else:
                del self._deleted[name]
        restructured = removed or self._structure_generation > since
        if self._structure_generation > since:
            snapshot.node_info_list = [
                snapshot.node_info_map[name]
                for name in self._tree.ordered()
                if name in snapshot.node_info_map
            ]
            snapshot.positions = {n.name: i for i, n in enumerate(snapshot.node_info_list)}
            affinity_flipped = True
        else:
            self._replace_in_list(snapshot, changed)
        if affinity_flipped:
            snapshot.with_affinity = [n for n in snapshot.node_info_list if n.pods_with_affinity]
        else:
            self._update_with_affinity(snapshot, affine)
        snapshot.record(changed, restructured=restructured)
        snapshot.generation = self._generation

    @staticmethod
    def _update_with_affinity(
        snapshot: Snapshot, affine: list[tuple[NodeInfo, bool, bool]]
    ) -> None:
        """Replace, insert or drop the changed nodes in the with-affinity
        list, which stays in ``node_info_list`` order (found by bisection on
        the nodes' list positions) without scanning every node."""
        items, positions = snapshot.with_affinity, snapshot.positions

        def position(info: NodeInfo) -> int:
            return positions[info.name]

        for info, had, has in affine:
            index = bisect_left(items, positions[info.name], key=position)
            if had and has:
                items[index] = info
            elif has:
                items.insert(index, info)
            else:
                del items[index]

    @staticmethod
    def _replace_in_list(snapshot: Snapshot, changed: list[NodeInfo]) -> None:
        if not changed:
            return
        items = snapshot.node_info_list
        for info in changed:
            index = snapshot.positions[info.name]
            items[index] = info
