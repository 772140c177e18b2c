"""The nominator: pods nominated to run on a node (upstream ``nominator.go``).

A pod is nominated to a node when a preemption freed room for it there
(``status.nominatedNodeName``). Until it is bound, later cycles treat it as
already on that node when they place pods of lower or equal priority
(``scheduler.runtime.nominated``), so the room is not taken from under it.

Pure and synchronous. Invariants:
- a pod UID is nominated to at most one node, and appears once in that
  node's list (``add`` always removes the previous entry first);
- the stored ``Pod`` is the newest version the queue was told about, so
  readers see its current priority;
- an empty node name means "not nominated": nothing is stored for it
  (upstream stores such pods under ``""``, which nothing ever reads).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from scheduler.framework.objects import Pod
from scheduler.framework.types import NominatingInfo, NominatingMode

_EMPTY: Mapping[str, Sequence[Pod]] = MappingProxyType({})


class Nominator:
    def __init__(self) -> None:
        self._by_node: dict[str, list[Pod]] = {}
        self._node_of: dict[str, str] = {}

    def add(self, pod: Pod, info: NominatingInfo | None) -> None:
        """Upstream ``addNominatedPod``: Override uses the info's node (empty:
        just clear); Noop (or no info) keeps the pod's own
        ``status.nominatedNodeName``. Callers never pass bound pods."""
        self.delete(pod)
        if info is not None and info.mode == NominatingMode.OVERRIDE:
            node_name = info.node_name
        else:
            node_name = pod.nominated_node_name
        if not node_name:
            return
        self._node_of[pod.uid] = node_name
        self._by_node.setdefault(node_name, []).append(pod)

    def update(self, old: Pod, new: Pod) -> None:
        """Upstream ``UpdateNominatedPod``: an update that neither has nor had
        a nominated node keeps the in-memory nomination (the API write that
        records it may not have landed yet); otherwise the new pod's status wins."""
        info: NominatingInfo | None = None
        if not old.nominated_node_name and not new.nominated_node_name:
            node_name = self._node_of.get(old.uid)
            if node_name is not None:
                info = NominatingInfo(node_name, NominatingMode.OVERRIDE)
        self.delete(old)
        self.add(new, info)

    def delete(self, pod: Pod) -> None:
        """Upstream ``DeleteNominatedPodIfExists``."""
        node_name = self._node_of.pop(pod.uid, None)
        if node_name is None:
            return
        pods = self._by_node.get(node_name, [])
        for index, nominated in enumerate(pods):
            if nominated.uid == pod.uid:
                del pods[index]
                break
        if not pods:
            self._by_node.pop(node_name, None)

    def pods_for_node(self, node_name: str) -> Sequence[Pod]:
        """A copy of the pods nominated to ``node_name``, in nomination order."""
        return list(self._by_node.get(node_name, ()))

    def node_of(self, uid: str) -> str:
        return self._node_of.get(uid, "")

    def by_node(self) -> Mapping[str, Sequence[Pod]]:
        """Read-only view for the per-node hot loop (empty most of the time)."""
        return MappingProxyType(self._by_node) if self._by_node else _EMPTY

    def __len__(self) -> int:
        return len(self._node_of)
