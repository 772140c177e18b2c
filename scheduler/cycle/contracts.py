"""What the scheduling loop and the binding cycles share: the protocols of
their collaborators (``SchedulingLoop`` is what a binding cycle asks of the
loop), the in-flight ``Binding``, and the single-node FitError."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.objects import Pod
from scheduler.framework.status import Code, Status
from scheduler.framework.types import (
    Diagnosis,
    FitError,
    NodeToStatus,
    NominatingInfo,
    QueuedPodInfo,
)
from scheduler.runtime.framework import Framework


class AttemptResult(enum.StrEnum):
    """``result`` of ``scheduler_schedule_attempts_total`` and the attempt duration."""

    SCHEDULED = "scheduled"
    UNSCHEDULABLE = "unschedulable"
    ERROR = "error"


class SchedulingQueueLike(Protocol):
    @property
    def scheduling_cycle(self) -> int: ...

    async def pop(self) -> QueuedPodInfo | None: ...

    def done(self, uid: str) -> None: ...

    def add_unschedulable_if_not_present(
        self, pinfo: QueuedPodInfo, pod_scheduling_cycle: int
    ) -> None: ...

    def activate(self, pods: Any) -> None: ...

    def add_nominated_pod(self, pod: Pod, info: NominatingInfo | None) -> None: ...

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None: ...

    def nominated_by_node(self) -> Mapping[str, Sequence[Pod]]: ...

    def move_all_to_active_or_backoff(
        self,
        event: Any,
        old: object,
        new: object,
        pre_check: Callable[[Pod], bool] | None = None,
    ) -> None: ...


class AttemptMetrics(Protocol):
    def attempt(self, result: AttemptResult, profile: str, seconds: float) -> None: ...

    def algorithm(self, seconds: float) -> None: ...

    def sli(self, attempts: int, seconds: float) -> None: ...

    def pod_attempts(self, attempts: int) -> None: ...

    def scheduled_after_flush(self) -> None: ...

    def goroutines(self, operation: str, delta: int) -> None: ...

    def bind_concurrency_limit(self, limit: int) -> None:
        """How many binding cycles may write at once now (0: unbounded)."""


class AttemptRecorder(Protocol):
    def record(self, pod_key: str, attempt: dict[str, Any]) -> None: ...


@dataclasses.dataclass(slots=True)
class Binding:
    """One pod between assume and the end of its binding cycle."""

    framework: Framework
    state: CycleState
    pinfo: QueuedPodInfo
    assumed: Pod
    host: str
    started: float
    cycle: int
    finished: bool = False  # set once a terminal path (bound, failed) ran


class SchedulingLoop(Protocol):
    """What a binding cycle reports back to the loop that started it
    (``Scheduler`` implements it)."""

    def handle_failure(
        self,
        framework: Framework,
        pinfo: QueuedPodInfo,
        fit_error: FitError | None,
        status: Status,
        *,
        cycle: int,
        started: float,
        nominating: NominatingInfo | None = None,
    ) -> None:
        """Upstream ``handleSchedulingFailure``: count, requeue, tell the user."""

    def forget(self, assumed: Pod) -> bool:
        """Forget the assumed pod in the cache; False if it was not assumed
        (any more)."""

    def activate(self, state: CycleState) -> None:
        """Move the pods a plugin asked to activate (``pods_to_activate``)."""

    def node_exists(self, name: str) -> bool:
        """The node is in the cache (not deleted since the pod was assumed)."""

    def binding_done(self) -> None:
        """The binding cycle ended: free its slot."""


def single_node_fit_error(pod: Pod, host: str, status: Status) -> FitError | None:
    """A rejection at Reserve, Permit, WaitOnPermit or PreBind, reported as a
    FitError over the one chosen node (upstream); None for other statuses."""
    if not status.is_rejected():
        return None
    diagnosis = Diagnosis(node_to_status=NodeToStatus(statuses={host: status}))
    if status.plugin:
        target = (
            diagnosis.pending_plugins
            if status.code is Code.PENDING
            else diagnosis.unschedulable_plugins
        )
        target.add(status.plugin)
    return FitError(pod, 1, diagnosis)
