"""The scheduling algorithm of one cycle: find feasible nodes, score them,
pick one. Synchronous and pure over the snapshot and the CycleState.

Follows upstream ``schedulePod``: PreFilter (with node-set narrowing), the
nominated node first, a rotating start index with early stop after
``num_feasible_nodes_to_find`` feasible nodes, PreScore/Score/Normalize with
weights, and a uniformly random choice among the best. Filtering is
sequential: upstream's parallelism only changes which feasible nodes are found
first, not the semantics.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from scheduler.cache.snapshot import Snapshot
from scheduler.cycle.selection import num_feasible_nodes_to_find, select_host
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.nodeinfo import NodeInfo
from scheduler.framework.objects import Pod
from scheduler.framework.status import Code, Status
from scheduler.framework.types import Diagnosis, FitError, NodePluginScores, NodeToStatus
from scheduler.runtime.framework import Framework

NO_NODES_AVAILABLE = "no nodes available to schedule pods"


class SchedulingError(Exception):
    """The cycle failed with an Error status (not a fit problem)."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


@dataclass(slots=True)
class ScheduleResult:
    suggested_host: str
    evaluated_nodes: int
    feasible_nodes: int
    scores: list[NodePluginScores] = field(default_factory=list)
    diagnosis: Diagnosis = field(default_factory=Diagnosis)


class Algorithm:
    """Holds the only state that survives cycles: the rotating start index."""

    def __init__(self, rng: random.Random, percentage_of_nodes_to_score: int = 0) -> None:
        self._rng = rng
        self._global_percentage = percentage_of_nodes_to_score
        self.next_start_node_index = 0

    def schedule_pod(
        self,
        framework: Framework,
        state: CycleState,
        pod: Pod,
        snapshot: Snapshot,
        percentage: int | None,
    ) -> ScheduleResult:
        """Raises FitError (no fit) or SchedulingError (an Error status)."""
        all_nodes = snapshot.node_info_list
        if not all_nodes:
            diagnosis = Diagnosis(pre_filter_msg=NO_NODES_AVAILABLE)
            raise FitError(pod, 0, diagnosis)
        feasible, diagnosis = self._find_nodes_that_fit(
            framework,
            state,
            pod,
            snapshot,
            self._global_percentage if percentage is None else percentage,
        )
        if not feasible:
            raise FitError(pod, len(all_nodes), diagnosis)
        evaluated = len(feasible) + len(diagnosis.node_to_status.statuses)
        if len(feasible) == 1:
            return ScheduleResult(feasible[0].name, evaluated, 1, diagnosis=diagnosis)
        scores = self._prioritize(framework, state, pod, feasible)
        host = select_host(scores, self._rng)
        return ScheduleResult(host, evaluated, len(feasible), scores, diagnosis)

    # --------------------------------------------------------------- filters
    def _find_nodes_that_fit(
        self,
        framework: Framework,
        state: CycleState,
        pod: Pod,
        snapshot: Snapshot,
        percentage: int,
    ) -> tuple[list[NodeInfo], Diagnosis]:
        all_nodes = snapshot.node_info_list
        diagnosis = Diagnosis()
        result, status, narrowing = framework.run_pre_filter(state, pod, all_nodes)
        if status is not None and status.code is not Code.SUCCESS:
            if not status.is_rejected():
                raise SchedulingError(status)
            diagnosis.node_to_status = NodeToStatus(absent=status)
            diagnosis.pre_filter_msg = status.message()
            if status.plugin:
                if status.code is Code.PENDING:
                    diagnosis.pending_plugins.add(status.plugin)
                else:
                    diagnosis.unschedulable_plugins.add(status.plugin)
            return [], diagnosis

        if pod.nominated_node_name:
            node_info = snapshot.get(pod.nominated_node_name)
            if node_info is not None and (
                result is None or result.node_names is None or node_info.name in result.node_names
            ):
                nominated_status = framework.run_filter(state, pod, node_info)
                if nominated_status is None:
                    return [node_info], diagnosis
                if nominated_status.is_error():
                    raise SchedulingError(nominated_status)

        candidates: Sequence[NodeInfo] = all_nodes
        if result is not None and result.node_names is not None:
            candidates = [
                snapshot.node_info_map[n] for n in result.node_names if n in snapshot.node_info_map
            ]
            names = sorted(narrowing)
            diagnosis.node_to_status.absent = Status.unresolvable(
                f"node(s) didn't satisfy plugin(s) [{' '.join(names)}]"
            )
        else:
            diagnosis.node_to_status.absent = Status.unresolvable()
        feasible = self._find_nodes_that_pass_filters(
            framework,
            state,
            pod,
            candidates,
            num_all_nodes=len(all_nodes),
            percentage=percentage,
            diagnosis=diagnosis,
        )
        return feasible, diagnosis

    def _find_nodes_that_pass_filters(
        self,
        framework: Framework,
        state: CycleState,
        pod: Pod,
        nodes: Sequence[NodeInfo],
        *,
        num_all_nodes: int,
        percentage: int,
        diagnosis: Diagnosis,
    ) -> list[NodeInfo]:
        count = len(nodes)
        if count == 0:
            return []
        to_find = num_feasible_nodes_to_find(count, percentage)
        if not framework.has_score_plugins():
            to_find = 1
        start = self.next_start_node_index % count
        if not framework.has_filter_plugins():
            taken = [nodes[(start + i) % count] for i in range(min(to_find, count))]
            self.next_start_node_index = (start + len(taken)) % num_all_nodes
            return taken
        feasible: list[NodeInfo] = []
        statuses = diagnosis.node_to_status.statuses
        begun = time.perf_counter()
        processed = 0
        error: Status | None = None
        for offset in range(count):
            node_info = nodes[(start + offset) % count]
            processed += 1
            status = framework.run_filter(state, pod, node_info)
            if status is None:
                feasible.append(node_info)
                if len(feasible) >= to_find:
                    break
                continue
            if status.is_error():
                error = status
                break
            statuses[node_info.name] = status
            if status.plugin:
                if status.code is Code.PENDING:
                    diagnosis.pending_plugins.add(status.plugin)
                else:
                    diagnosis.unschedulable_plugins.add(status.plugin)
        framework.observe_filter(error, begun)
        self.next_start_node_index = (start + processed) % num_all_nodes
        if error is not None:
            raise SchedulingError(error)
        return feasible

    # --------------------------------------------------------------- scoring
    def _prioritize(
        self, framework: Framework, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> list[NodePluginScores]:
        if not framework.has_score_plugins():
            return [NodePluginScores(node.name, (), 1) for node in nodes]
        status = framework.run_pre_score(state, pod, nodes)
        if status is not None:
            raise SchedulingError(status)
        scores, status = framework.run_score(state, pod, nodes)
        if status is not None:
            raise SchedulingError(status)
        return scores
