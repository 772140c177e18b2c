"""PrioritySort orders activeQ: higher ``spec.priority`` first, ties broken by
the earlier queue timestamp (upstream ``PrioritySort.Less``).

Invariant: ``less`` is a strict weak order (irreflexive, transitive), as the
queue's heap requires.
"""

from __future__ import annotations

from scheduler.framework import Handle, QueuedPodInfo, QueueSortPlugin

NAME = "PrioritySort"


class PrioritySort(QueueSortPlugin):
    name = NAME

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        first, second = a.pod.priority, b.pod.priority
        return first > second or (first == second and a.timestamp < b.timestamp)


def new(args: object, handle: Handle) -> PrioritySort:
    return PrioritySort()
