"""The scheduling queue (upstream ``pkg/scheduler/backend/queue``).

A pure synchronous core with a thin async ``pop``: activeQ ordered by the
QueueSort ``less``, backoffQ (two heaps), the unschedulable pool with
PreEnqueue gating, queueing hints and in-flight event replay. See
``queue.SchedulingQueue`` for the invariants.
"""

from scheduler.queue.backoff import BackoffPolicy
from scheduler.queue.hints import Strategy, is_pod_updated, pod_update_events
from scheduler.queue.metrics import (
    HintResult,
    MoveEvent,
    NoopQueueMetrics,
    QueueMetrics,
    QueueName,
)
from scheduler.queue.profile import ALL_EVENTS, QueueProfile
from scheduler.queue.queue import SchedulingQueue

__all__ = [
    "ALL_EVENTS",
    "BackoffPolicy",
    "HintResult",
    "MoveEvent",
    "NoopQueueMetrics",
    "QueueMetrics",
    "QueueName",
    "QueueProfile",
    "SchedulingQueue",
    "Strategy",
    "is_pod_updated",
    "pod_update_events",
]
