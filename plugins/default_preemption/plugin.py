"""DefaultPreemption: when no node fits, make room on one by evicting pods
of lower priority (upstream ``defaultpreemption`` + ``preemption.Evaluator``).

PostFilter runs inside the scheduling cycle and decides synchronously:
eligibility, the candidate nodes (those Filter rejected as ``Unschedulable``,
never ``UnschedulableAndUnresolvable``), a dry run per node on what-if copies
(``victims``), and the choice of a node (``candidates``). The API writes go
to the ``executor`` in the background; PreEnqueue keeps the preemptor out of
activeQ until they are done. The preemptor is nominated to the node through
the result (the scheduler records it in the nominator and in
``status.nominatedNodeName``).

Every message it returns starts with ``preemption: `` and follows the
scheduler's message (upstream's FitError format for "no candidate").
"""

from __future__ import annotations

import random

from plugins.default_preemption.args import DefaultPreemptionArgs
from plugins.default_preemption.candidates import (
    Candidate,
    dry_run,
    num_candidates,
    pick_one_node_for_preemption,
)
from plugins.default_preemption.eligibility import ineligibility
from plugins.default_preemption.executor import Executor
from plugins.default_preemption.pdb import DisruptionBudget, parse_pdb
from plugins.default_preemption.victims import (
    REASON_NO_VICTIMS,
    may_preempt,
    select_victims_on_node,
)
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EnqueueExtensions,
    EventResource,
    Handle,
    NodeToStatus,
    NominatingInfo,
    NominatingMode,
    Pod,
    PostFilterPlugin,
    PostFilterResult,
    PreEnqueuePlugin,
    QueueingHint,
    Status,
    parse_pod,
)
from scheduler.framework.types import Diagnosis, fit_error_message

NAME = "DefaultPreemption"
MESSAGE_PREFIX = "preemption: "
NOT_HELPFUL = "Preemption is not helpful for scheduling"
WAITING = "waiting for the preemption for this pod to be finished"
NO_CANDIDATE = "no candidate node for preemption"


def _skip(pod: Pod, old: object, new: object) -> QueueingHint:
    """Pods rejected by this plugin are waiting on their own preemption; the
    plugins that rejected them in Filter decide when a deletion helps."""
    return QueueingHint.QUEUE_SKIP


class DefaultPreemption(PostFilterPlugin, PreEnqueuePlugin, EnqueueExtensions):
    name = NAME

    def __init__(
        self, args: DefaultPreemptionArgs, handle: Handle, rng: random.Random | None = None
    ) -> None:
        self._args = args
        self._handle = handle
        self._rng = rng if rng is not None else handle.rng_for(NAME)
        # Requested now, so the informers list and watch from the start.
        self._pods = handle.informers.store("pods")
        self._pdbs = handle.informers.store("poddisruptionbudgets")
        self.executor = Executor(handle, self._pods, NAME)

    # ------------------------------------------------------------ PreEnqueue
    def pre_enqueue(self, pod: Pod) -> Status | None:
        if self.executor.is_running(pod.uid):
            return Status.unresolvable(WAITING)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.DELETE), _skip)]

    # ------------------------------------------------------------ PostFilter
    def post_filter(
        self, state: CycleState, pod: Pod, filtered: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        self._handle.metrics.preemption_attempt()
        result, status = self._preempt(state, pod, filtered)
        if status is not None and status.message():
            prefixed = MESSAGE_PREFIX + status.message()
            if status.is_error():
                return result, Status.as_error(prefixed)
            return result, Status(status.code, (prefixed,))
        return result, status

    def _preempt(
        self, state: CycleState, pod: Pod, filtered: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        raw = self._pods.get(pod.key)
        if raw is None:
            return None, Status.as_error(f'pods "{pod.name}" not found')
        pod = parse_pod(raw)
        snapshot = self._handle.snapshot()
        nominated_node = snapshot.get(pod.nominated_node_name) if pod.nominated_node_name else None
        problem = ineligibility(pod, filtered.get(pod.nominated_node_name), nominated_node)
        if problem:
            return None, Status.unschedulable(problem)

        all_nodes = snapshot.node_infos()
        potential = [
            node.name for node in all_nodes if filtered.get(node.name).code is Code.UNSCHEDULABLE
        ]
        candidates: list[Candidate] = []
        statuses: dict[str, Status] = {}
        if potential:
            pdbs = [parse_pdb(item) for item in self._pdbs.list()]
            wanted = num_candidates(
                len(potential),
                self._args.min_candidate_nodes_percentage,
                self._args.min_candidate_nodes_absolute,
            )
            offset = self._rng.randrange(len(potential))
            candidates, statuses = dry_run(
                potential, offset, wanted, lambda name: self._check(state, pod, name, pdbs)
            )
            errors = [status for status in statuses.values() if status.is_error()]
            if errors and not candidates:
                return None, Status.as_error(", ".join(error.message() for error in errors))
        if not candidates:
            diagnosis = Diagnosis(
                node_to_status=NodeToStatus(statuses, Status.unresolvable(NOT_HELPFUL))
            )
            message = fit_error_message(len(all_nodes), diagnosis)
            clear = PostFilterResult(NominatingInfo("", NominatingMode.OVERRIDE))
            return clear, Status.unschedulable(message)
        best = pick_one_node_for_preemption(candidates)
        if best is None:
            return None, Status.unschedulable(NO_CANDIDATE)
        self.executor.start(best.node_name, best.victims, pod)
        return PostFilterResult(NominatingInfo(best.node_name, NominatingMode.OVERRIDE)), None

    def _check(
        self, state: CycleState, pod: Pod, node_name: str, pdbs: list[DisruptionBudget]
    ) -> tuple[list[Pod], int, Status | None]:
        node_info = self._handle.snapshot().get(node_name)
        if node_info is None:
            return [], 0, Status.as_error(f'node "{node_name}" not found')
        if not any(may_preempt(pod, other) for other in node_info.pods.values()):
            # The common case on busy clusters of equal priorities: skip the copies.
            return [], 0, Status.unresolvable(REASON_NO_VICTIMS)
        return select_victims_on_node(self._handle, state.clone(), pod, node_info.clone(), pdbs)


def new(args: DefaultPreemptionArgs | None, handle: Handle) -> DefaultPreemption:
    return DefaultPreemption(args or DefaultPreemptionArgs(), handle)
