"""The scheduling algorithm of one cycle: find feasible nodes, score them,
pick one. Synchronous and pure over the snapshot and the CycleState.

Follows upstream ``schedulePod``: PreFilter (with node-set narrowing), the
nominated node first, a rotating start index with early stop after
``num_feasible_nodes_to_find`` feasible nodes, PreScore/Score/Normalize with
weights, and a uniformly random choice among the best. A node with pods
nominated to it of greater or equal priority is filtered with them counted
(``scheduler.runtime.nominated``), outside verdict reuse. The walk over the
nodes is written once: per node it reads the status the framework's
``NodeFilter`` reuses whole, else has it run the filters, which reuses what
it may (``scheduler.runtime.verdicts``). Filtering is
sequential: upstream's parallelism only changes which feasible nodes are found
first, not the semantics.
"""

from __future__ import annotations

import itertools
import logging
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from scheduler.cache.snapshot import Snapshot
from scheduler.cycle.selection import num_feasible_nodes_to_find, select_host
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.nodeinfo import NodeInfo
from scheduler.framework.objects import Pod
from scheduler.framework.status import Code, Status
from scheduler.framework.types import Diagnosis, FitError, NodeToStatus, ScoreTable
from scheduler.runtime.framework import Framework
from scheduler.runtime.nominated import run_filters_with_nominated_pods, yielding_to

log = logging.getLogger(__name__)

NO_NODES_AVAILABLE = "no nodes available to schedule pods"


class NoNodesAvailableError(FitError):
    """The snapshot has no node at all (upstream ``ErrNoNodesAvailable``): a
    rejection without plugins whose message is just ``NO_NODES_AVAILABLE``."""

    def __init__(self, pod: Pod) -> None:
        super().__init__(pod, 0, Diagnosis(pre_filter_msg=NO_NODES_AVAILABLE))

    def __str__(self) -> str:
        return NO_NODES_AVAILABLE


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
    scores: ScoreTable | None = None
    diagnosis: Diagnosis = field(default_factory=Diagnosis)


class NominatedPods(Protocol):
    def nominated_by_node(self) -> Mapping[str, Sequence[Pod]]:
        """Pods nominated to each node (the queue's nominator), read-only."""


class Algorithm:
    """Holds the only state that survives cycles: the rotating start index."""

    def __init__(
        self,
        rng: random.Random,
        percentage_of_nodes_to_score: int = 0,
        nominated: NominatedPods | None = None,
    ) -> None:
        self._rng = rng
        self._global_percentage = percentage_of_nodes_to_score
        self._nominated = nominated
        self.next_start_node_index = 0

    def _nominations(self) -> Mapping[str, Sequence[Pod]]:
        return self._nominated.nominated_by_node() if self._nominated is not None else {}

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
            raise NoNodesAvailableError(pod)
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
        result, status, narrowing = framework.filtering.run_pre_filter(state, pod, all_nodes)
        # As upstream, the plugins that narrowed the node set count as rejectors:
        # an event they registered for may widen the set.
        diagnosis = Diagnosis(unschedulable_plugins=set(narrowing))
        if status is not None and status.code is not Code.SUCCESS:
            if not status.is_rejected():
                raise SchedulingError(status)
            diagnosis.node_to_status = NodeToStatus(absent=status)
            diagnosis.pre_filter_msg = status.message()
            _add_plugin_status(diagnosis, status)
            return [], diagnosis

        if pod.nominated_node_name:
            nominated = self._evaluate_nominated_node(framework, state, pod, snapshot, diagnosis)
            if nominated is not None:
                return [nominated], diagnosis

        candidates: Sequence[NodeInfo] = all_nodes
        if result is not None and result.node_names is not None:
            # In snapshot order, so that the rotating start index means the same
            # thing in every cycle (a set's order is arbitrary).
            known = snapshot.node_info_map
            positions = snapshot.positions
            candidates = [
                known[name]
                for name in sorted(
                    (name for name in result.node_names if name in known),
                    key=lambda name: positions.get(name, 0),
                )
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

    def _evaluate_nominated_node(
        self,
        framework: Framework,
        state: CycleState,
        pod: Pod,
        snapshot: Snapshot,
        diagnosis: Diagnosis,
    ) -> NodeInfo | None:
        """The node a preemption freed for this pod, if it fits now. Its
        rejection is recorded like any node's; an Error only costs the
        shortcut (upstream logs it and searches all nodes)."""
        node_info = snapshot.get(pod.nominated_node_name)
        if node_info is None:
            return None
        nominated = self._nominations().get(node_info.name, ())
        status = run_filters_with_nominated_pods(framework, state, pod, node_info, nominated)
        if status is None:
            return node_info
        if status.is_error():
            log.warning(
                "evaluation failed on nominated node %s for pod %s: %s",
                node_info.name,
                pod.key,
                status.message(),
            )
            return None
        diagnosis.node_to_status.statuses[node_info.name] = status
        _add_plugin_status(diagnosis, status)
        return None

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
        statuses = diagnosis.node_to_status.statuses
        if not framework.has_filter_plugins():
            taken = [nodes[(start + i) % count] for i in range(min(to_find, count))]
            self._advance_start(len(taken) + len(statuses), num_all_nodes)
            return taken
        begun = time.perf_counter()
        filtering = framework.filtering
        filters = filtering.active_filters(state)
        # The verdict source decides what is reused and what runs: statuses
        # reused whole are read here inline (the hot path), the rest it runs.
        node_filter = filtering.node_filter(state, pod, filters, count)
        reused = node_filter.reused.get
        run = node_filter.run
        # Nodes with nominated pods this pod yields to (usually none): filtered
        # with those pods counted, never reused.
        yield_to = self._yield_to(pod)
        feasible: list[NodeInfo] = []
        append = feasible.append
        wanted = max(to_find, 1)
        error: Status | None = None
        status: Status | None
        for node_info in itertools.chain(
            itertools.islice(nodes, start, None), itertools.islice(nodes, start)
        ):
            if yield_to and node_info.name in yield_to:
                status = run_filters_with_nominated_pods(
                    framework, state, pod, node_info, yield_to[node_info.name], filters=filters
                )
            else:
                cached = reused(node_info.name)
                if cached is not None and cached[0] == node_info.generation:
                    status = cached[1]
                else:
                    status = run(node_info)
            if status is None:
                append(node_info)
                wanted -= 1
                if not wanted:
                    break
                continue
            if status.is_error():
                error = status
                break
            statuses[node_info.name] = status
            _add_plugin_status(diagnosis, status)
        filtering.count_filter_evaluations(filters, node_filter.passed, node_filter.rejected_by)
        filtering.observe_filter(error, begun)
        # Even after an error, so that every node gets its turn (upstream).
        self._advance_start(len(feasible) + len(statuses), num_all_nodes)
        if error is not None:
            raise SchedulingError(error)
        return feasible

    def _yield_to(self, pod: Pod) -> dict[str, list[Pod]]:
        """Node -> the pods nominated to it that ``pod`` must leave room for."""
        result: dict[str, list[Pod]] = {}
        for name, nominated in self._nominations().items():
            ahead = yielding_to(pod, nominated)
            if ahead:
                result[name] = ahead
        return result

    def _advance_start(self, processed: int, num_all_nodes: int) -> None:
        """Upstream: the start index moves by the nodes that were evaluated
        (feasible or with a status), modulo all nodes of the snapshot."""
        self.next_start_node_index = (self.next_start_node_index + processed) % num_all_nodes

    # --------------------------------------------------------------- scoring
    def _prioritize(
        self, framework: Framework, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> ScoreTable:
        if not framework.has_score_plugins():
            return ScoreTable([node.name for node in nodes], (), (), [1] * len(nodes))
        status = framework.scoring.run_pre_score(state, pod, nodes)
        if status is not None:
            raise SchedulingError(status)
        scores, status = framework.scoring.run_score(state, pod, nodes)
        if status is not None:
            raise SchedulingError(status)
        return scores


def _add_plugin_status(diagnosis: Diagnosis, status: Status) -> None:
    """Record the rejecting plugin: Pending plugins apart, as the queue reads them."""
    if not status.plugin:
        return
    if status.code is Code.PENDING:
        diagnosis.pending_plugins.add(status.plugin)
    elif status.is_rejected():
        diagnosis.unschedulable_plugins.add(status.plugin)
