"""Every Filter plugin's verdict on every node for one pod, after a run.

The scheduling cycle stops at a node's first failing plugin and keeps a
sample of nodes; ``explain --snapshot`` can afford the whole matrix, since
no cluster waits on it. Same plugins, same PreFilter state, same snapshot
as the cycle: PreFilter once, then each active Filter plugin on each node,
none stopping early; and, per node, how much of each resource the pod
lacks there. Pure over the engine's cache; writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from scheduler.engine.core import Engine
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.nodeinfo import NodeInfo
from scheduler.framework.objects import Pod
from scheduler.framework.resource import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from scheduler.framework.status import Code, Status

ALL_NODES = "*"


@dataclass(frozen=True)
class PluginVerdict:
    plugin: str
    code: str
    reasons: tuple[str, ...]


def _amount(name: str, value: int) -> str:
    if name == CPU:
        return f"{value}m" if value % 1000 else str(value // 1000)
    if name in (MEMORY, EPHEMERAL_STORAGE) and value >= 2**20:
        return f"{value / 2**20:.0f}Mi"
    return str(value)


def shortfall(pod: Pod, node_info: NodeInfo) -> dict[str, str]:
    """How much more of each resource the pod requests than the node has
    free (requests against allocatable, as Fit counts them), and a pod slot."""
    free = node_info.allocatable - node_info.requested
    short = {
        name: _amount(name, pod.requests.get(name) - free.get(name))
        for name in pod.requests.names()
        if pod.requests.get(name) > free.get(name)
    }
    if len(node_info.pods) + 1 > node_info.allocatable.allowed_pods:
        short[PODS] = "1"
    return short


def _verdict(plugin: str, status: Status) -> PluginVerdict:
    return PluginVerdict(status.plugin or plugin, status.code.label, tuple(status.reasons))


def node_shortfalls(engine: Engine, pod: Pod, names: Iterable[str]) -> dict[str, dict[str, str]]:
    """``shortfall`` for each named node of the engine's snapshot."""
    result = {}
    for name in names:
        node_info = engine.snapshot.get(name)
        if node_info is not None:
            short = shortfall(pod, node_info)
            if short:
                result[name] = short
    return result


def filter_matrix(engine: Engine, pod: Pod) -> dict[str, list[PluginVerdict]]:
    """Node -> the plugins that reject ``pod`` there (nodes that fit are left
    out). A PreFilter rejection applies to every node: key ``ALL_NODES``."""
    framework = engine.frameworks.get(pod.scheduler_name)
    if framework is None:
        return {}
    engine.cache.update_snapshot(engine.snapshot)
    nodes = engine.snapshot.node_infos()
    state = CycleState()
    _, status, _ = framework.run_pre_filter(state, pod, nodes)
    if status is not None and status.code is not Code.SUCCESS:
        return {ALL_NODES: [_verdict(status.plugin or "PreFilter", status)]}
    filters = framework.active_filters(state)
    matrix: dict[str, list[PluginVerdict]] = {}
    for node_info in nodes:
        verdicts = []
        for plugin in filters:
            try:
                result = plugin.filter(state, pod, node_info)
            except Exception as error:  # a plugin bug shows as an Error verdict
                result = Status.as_error(error)
            if result is not None and result.code is not Code.SUCCESS:
                verdicts.append(_verdict(plugin.name, result))
        if verdicts:
            matrix[node_info.name] = verdicts
    return matrix
