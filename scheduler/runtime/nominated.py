"""Filtering with nominated pods (upstream ``RunFilterPluginsWithNominatedPods``).

Pods nominated to a node by an earlier preemption are not on it yet, but the
room was freed for them. A pod of lower priority must not take it: when the
node has nominated pods of greater or equal priority (other than the pod
itself), the filters run twice. Pass 1 runs on a what-if copy of the NodeInfo
and a clone of the CycleState with those pods added (each through every
PreFilter plugin's ``add_pod`` extension, so plugins that precompute state in
PreFilter, such as InterPodAffinity or PodTopologySpread, see them). If pass 1
passes, pass 2 runs on the node as it is, because a filter such as pod
affinity may pass only with the nominated pods present. Both must pass.

Synchronous and pure over its arguments. The what-if copies never enter the
verdict cache: their results depend on the nominations, not only on the node.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interfaces import FilterPlugin
from scheduler.framework.nodeinfo import NodeInfo
from scheduler.framework.objects import Pod
from scheduler.framework.status import Status


class PodNominator(Protocol):
    def nominated_pods_for_node(self, node_name: str) -> Sequence[Pod]: ...


class FilterRunner(Protocol):
    """The parts of ``Framework`` this module needs."""

    def run_filters(
        self,
        plugins: tuple[FilterPlugin, ...],
        state: CycleState,
        pod: Pod,
        node_info: NodeInfo,
    ) -> Status | None: ...

    def active_filters(self, state: CycleState) -> tuple[FilterPlugin, ...]: ...

    def run_pre_filter_add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None: ...


def yielding_to(pod: Pod, nominated: Sequence[Pod]) -> list[Pod]:
    """The nominated pods ``pod`` must leave room for: priority >= its own."""
    return [other for other in nominated if other.priority >= pod.priority and other.uid != pod.uid]


def add_nominated_pods(
    framework: FilterRunner,
    state: CycleState,
    pod: Pod,
    node_info: NodeInfo,
    nominated: Sequence[Pod],
) -> tuple[CycleState, NodeInfo, Status | None]:
    """Upstream ``addGENominatedPods`` for pods already chosen by ``yielding_to``:
    a cloned state and NodeInfo with them added, or an Error status."""
    state_out = state.clone()
    node_out = node_info.clone()
    for other in nominated:
        node_out.add_pod(other)
        status = framework.run_pre_filter_add_pod(state_out, pod, other, node_out)
        if status is not None and not status.is_success():
            return state, node_info, status
    return state_out, node_out, None


def run_filters_with_nominated_pods(
    framework: FilterRunner,
    state: CycleState,
    pod: Pod,
    node_info: NodeInfo,
    nominated: Sequence[Pod],
    *,
    filters: tuple[FilterPlugin, ...] | None = None,
) -> Status | None:
    """Filter ``node_info`` honouring ``nominated`` (all pods nominated to the
    node; those of lower priority are ignored). ``filters`` is the cycle's
    active Filter list when the caller has it."""
    plugins = framework.active_filters(state) if filters is None else filters
    ahead = yielding_to(pod, nominated) if nominated else []
    if not ahead:
        return framework.run_filters(plugins, state, pod, node_info)
    what_if_state, what_if_node, error = add_nominated_pods(framework, state, pod, node_info, ahead)
    if error is not None:
        return Status.as_error(error.message())
    status = framework.run_filters(plugins, what_if_state, pod, what_if_node)
    if status is not None:
        return status
    return framework.run_filters(plugins, state, pod, node_info)


def run_filter_plugins_with_nominated_pods(
    framework: FilterRunner,
    nominator: PodNominator | None,
    state: CycleState,
    pod: Pod,
    node_info: NodeInfo,
) -> Status | None:
    """The Handle's form: looks the node's nominations up itself."""
    nominated = nominator.nominated_pods_for_node(node_info.name) if nominator else ()
    return run_filters_with_nominated_pods(framework, state, pod, node_info, nominated)
