"""What the queue reports, as a protocol, plus the label values it uses.

The queue calls a ``QueueMetrics`` for every move; the Prometheus
implementation lives with the other metrics and is handed in by the
composition root. ``NoopQueueMetrics`` is the default.

Label values are the upstream ones: sub-queue names (``active``, ``backoff``,
``unschedulable``, ``gated``), event labels (``ClusterEvent.label`` or one of
``MoveEvent``), hint results (``Queue``, ``QueueSkip``, ``Error``).
"""

from __future__ import annotations

import enum
from typing import Protocol

from scheduler.framework.events import (
    FORCE_ACTIVATE,
    UNSCHEDULABLE_TIMEOUT,
    ActionType,
    ClusterEvent,
    Resource,
)


class QueueName(enum.StrEnum):
    """Sub-queues, spelled as the ``queue`` label of the queue metrics."""

    ACTIVE = "active"
    BACKOFF = "backoff"
    UNSCHEDULABLE = "unschedulable"
    GATED = "gated"


class MoveEvent(enum.StrEnum):
    """Labels of moves that are not cluster events (upstream constants)."""

    SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
    BACKOFF_COMPLETE = "BackoffComplete"
    POP_FROM_BACKOFF_Q = "PopFromBackoffQ"
    FORCE_ACTIVATE = FORCE_ACTIVATE.label
    UNSCHEDULABLE_TIMEOUT = UNSCHEDULABLE_TIMEOUT.label


class HintResult(enum.StrEnum):
    QUEUE = "Queue"
    QUEUE_SKIP = "QueueSkip"
    ERROR = "Error"


# The informer events for unscheduled pods of our profiles.
UNSCHEDULED_POD_ADD = ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.ADD)
UNSCHEDULED_POD_UPDATE = ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.UPDATE)

# The in-flight list counts popped pods under this label (upstream PodPoppedInFlightEvent).
POD_POPPED = "PodPopped"


class QueueMetrics(Protocol):
    def incoming(self, queue: str, event: str) -> None:
        """``scheduler_queue_incoming_pods_total{queue,event}`` += 1."""

    def pending(self, queue: str, count: int) -> None:
        """``scheduler_pending_pods{queue}`` = count."""

    def unschedulable_plugin(self, plugin: str, profile: str, delta: int) -> None:
        """``scheduler_unschedulable_pods{plugin,profile}`` += delta."""

    def hint(self, plugin: str, event: str, hint: str, seconds: float) -> None:
        """``scheduler_queueing_hint_execution_duration_seconds{plugin,event,hint}``."""

    def inflight_events(self, event: str, delta: int) -> None:
        """``scheduler_inflight_events{event}`` += delta."""


class NoopQueueMetrics:
    def incoming(self, queue: str, event: str) -> None:
        pass

    def pending(self, queue: str, count: int) -> None:
        pass

    def unschedulable_plugin(self, plugin: str, profile: str, delta: int) -> None:
        pass

    def hint(self, plugin: str, event: str, hint: str, seconds: float) -> None:
        pass

    def inflight_events(self, event: str, delta: int) -> None:
        pass
