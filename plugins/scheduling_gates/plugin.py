"""SchedulingGates: the PreEnqueue plugin for ``spec.schedulingGates``.

A pod with at least one gate is gated (UnschedulableAndUnresolvable) with the
upstream message ``waiting for scheduling gates: [a b]``. Gates can only be
removed, never added, so the only event that can ungate a pod is an update of
that same pod removing its gates (``UpdatePodSchedulingGatesEliminated``).
"""

from __future__ import annotations

from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EnqueueExtensions,
    EventResource,
    Handle,
    Pod,
    PreEnqueuePlugin,
    QueueingHint,
    Status,
)

NAME = "SchedulingGates"
REASON_PREFIX = "waiting for scheduling gates"


class SchedulingGates(PreEnqueuePlugin, EnqueueExtensions):
    name = NAME

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod.scheduling_gates:
            return None
        return Status.unresolvable(gated_reason(pod.scheduling_gates))

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                self.is_schedulable_after_gates_eliminated,
            )
        ]

    def is_schedulable_after_gates_eliminated(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        # Another pod losing its gates does nothing for this one.
        if new is None or new.uid != pod.uid:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE


def gated_reason(gates: tuple[str, ...]) -> str:
    """Go's ``%v`` rendering of a string slice: ``[a b]``."""
    return f"{REASON_PREFIX}: [{' '.join(gates)}]"


def new(args: object, handle: Handle) -> SchedulingGates:
    return SchedulingGates()
