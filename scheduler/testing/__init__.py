"""Public test helpers for plugin authors: build pods and nodes, build a
plugin from its ``PluginSpec`` with arguments validated exactly as a
``KubeSchedulerConfiguration`` would, and run its Filter or Score the way the
framework does, without a cluster.

    from scheduler.testing import build_plugin, make_node, make_pod, run_filter

    plugin = build_plugin(SPEC, {"label": "pool", "allowed": ["blue"]})
    status = run_filter(plugin, make_pod("p"), make_node("n", labels={"pool": "red"}))

``check_signature_promise(plugin, pods, nodes)`` checks the promise of a
plugin implementing ``SignPlugin``: pods with equal signature fragments get
equal verdicts and scores on every node, whatever the other nodes of the
cycle (the framework reuses results on that promise).

``PodBuilder``/``NodeBuilder`` (``scheduler.testing.builders``) build any pod or
node the scheduler's own tests build; ``ConfigError`` is what ``build_plugin``
raises for arguments a configuration would refuse.

A stable, pinned API (``__all__``, checked with ``scheduler.framework``'s by
``tests/unit/framework/test_public_api.py``; used by ``examples/plugin-package``'s
own tests); everything returned is the framework's own type (``Pod``,
``NodeInfo``, ``Status``).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, TypeVar

from scheduler.config.errors import ConfigError, Problem
from scheduler.config.plugin_args import validate_args
from scheduler.framework import (
    Code,
    CycleState,
    FilterPlugin,
    NodeInfo,
    NodeScore,
    Plugin,
    PluginSpec,
    Pod,
    PreFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    SignPlugin,
    Status,
)
from scheduler.testing.builders import NodeBuilder, PodBuilder

__all__ = [
    "ConfigError",
    "NodeBuilder",
    "PodBuilder",
    "build_plugin",
    "check_signature_promise",
    "make_node",
    "make_pod",
    "run_filter",
    "run_score",
]

P = TypeVar("P", bound=Plugin)


def make_pod(
    name: str,
    namespace: str = "default",
    *,
    labels: Mapping[str, str] | None = None,
    requests: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    scheduler_name: str = "default-scheduler",
    uid: str | None = None,
) -> Pod:
    """A parsed Pod with one container requesting ``requests`` (for more, use
    ``PodBuilder``: ``PodBuilder("p").requests(cpu="1").build()``)."""
    builder = PodBuilder(name, namespace).scheduler(scheduler_name)
    builder.uid(uid or f"uid-{namespace}-{name}")
    for key, value in (labels or {}).items():
        builder.label(key, value)
    if requests:
        builder.requests(**requests)
    if node_selector:
        builder.node_selector(**node_selector)
    return builder.build()


def make_node(
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    running: Sequence[Pod] = (),
) -> NodeInfo:
    """A NodeInfo as in a snapshot: the node (allocatable = capacity) and the
    pods ``running`` on it (for more, use ``NodeBuilder``)."""
    resources = {"cpu": cpu, "memory": memory, "pods": pods}
    builder = NodeBuilder(name).capacity(**resources).allocatable(**resources)
    for key, value in (labels or {}).items():
        builder.label(key, value)
    info = NodeInfo(builder.build())
    for pod in running:
        info.add_pod(pod)
    return info


class _NoHandle:
    """Stands in for the Handle: a plugin whose factory uses it needs a real
    one (pass ``handle=``)."""

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"scheduler.testing has no Handle ({name!r}); pass handle=...")


def build_plugin(
    spec: PluginSpec[Any], args: Mapping[str, Any] | None = None, handle: Any = None
) -> Plugin:
    """The plugin built from ``spec`` with ``args`` (a ``pluginConfig`` entry's
    ``args``) validated by its model, defaults filled; a ``ConfigError`` naming
    the field otherwise."""
    problems: list[Problem] = []
    validated = validate_args(spec, args, ("pluginConfig", spec.name, "args"), problems)
    if problems:
        raise ConfigError(problems)
    return spec.factory(validated, handle if handle is not None else _NoHandle())


def _pre_filter(plugin: Plugin, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> bool:
    """Run PreFilter if there is one; False if it says to skip Filter."""
    if not isinstance(plugin, PreFilterPlugin):
        return True
    _, status = plugin.pre_filter(state, pod, nodes)
    if status is not None and status.code is Code.SKIP:
        return False
    if status is not None and not status.is_success():
        raise AssertionError(f"PreFilter rejected the pod: {status}")
    return True


def run_filter(plugin: Plugin, pod: Pod, node: NodeInfo) -> Status | None:
    """PreFilter (if any) then Filter on one node, as one cycle; None = fits."""
    assert isinstance(plugin, FilterPlugin), f"{plugin.name} is not a Filter plugin"
    state = CycleState()
    if not _pre_filter(plugin, state, pod, [node]):
        return None
    return plugin.filter(state, pod, node)


def run_score(plugin: Plugin, pod: Pod, nodes: Sequence[NodeInfo]) -> dict[str, int]:
    """PreScore (if any), Score on every node, then NormalizeScore (if any):
    the plugin's final scores by node name, before the profile's weight."""
    assert isinstance(plugin, ScorePlugin), f"{plugin.name} is not a Score plugin"
    state = CycleState()
    if isinstance(plugin, PreScorePlugin):
        status = plugin.pre_score(state, pod, nodes)
        if status is not None and status.code is Code.SKIP:
            return {}
    scores = []
    for node in nodes:
        value, status = plugin.score(state, pod, node)
        if status is not None and not status.is_success():
            raise AssertionError(f"Score failed on {node.name}: {status}")
        scores.append(NodeScore(node.name, value))
    extensions = plugin.score_extensions()
    if extensions is not None:
        extensions.normalize_score(state, pod, scores)
    return {each.name: each.score for each in scores}


# What a plugin decides for a pod on one node in one cycle, comparable:
# ("fits",), ("skipped",), ("narrowed out",) or (stage, code, reasons).
Verdict = tuple[object, ...]


def _verdict(stage: str, status: Status) -> Verdict:
    return (stage, status.code.label, tuple(status.reasons))


def _cycle(
    plugin: Plugin, pod: Pod, nodes: Sequence[NodeInfo]
) -> tuple[dict[str, Verdict], dict[str, int] | None, tuple[int, ...] | None]:
    """One cycle of ``plugin`` alone over ``nodes``, as the framework runs it:
    each node's PreFilter/Filter verdict; the raw scores (before
    NormalizeScore) of the nodes that passed, by node; the normalized scores
    in node order (None: the plugin does not score, or skipped)."""
    state = CycleState()
    verdicts: dict[str, Verdict] = {}
    feasible: list[NodeInfo] = []
    narrowed: set[str] | None = None
    rejected: Verdict | None = None
    skip_filter = False
    if isinstance(plugin, PreFilterPlugin):
        result, status = plugin.pre_filter(state, pod, nodes)
        if status is not None and status.code is Code.SKIP:
            skip_filter = True
        elif status is not None and not status.is_success():
            rejected = _verdict("PreFilter", status)
        elif result is not None and result.node_names is not None:
            narrowed = set(result.node_names)
    for node in nodes:
        if rejected is not None:
            verdicts[node.name] = rejected
        elif narrowed is not None and node.name not in narrowed:
            verdicts[node.name] = ("narrowed out",)
        elif skip_filter or not isinstance(plugin, FilterPlugin):
            verdicts[node.name] = ("skipped",) if skip_filter else ("fits",)
            feasible.append(node)
        else:
            status = plugin.filter(state, pod, node)
            if status is None or status.is_success():
                verdicts[node.name] = ("fits",)
                feasible.append(node)
            else:
                verdicts[node.name] = _verdict("Filter", status)
    if not isinstance(plugin, ScorePlugin) or not feasible:
        return verdicts, None, None
    if isinstance(plugin, PreScorePlugin):
        status = plugin.pre_score(state, pod, feasible)
        if status is not None and status.code is Code.SKIP:
            return verdicts, None, None
        if status is not None and not status.is_success():
            verdicts = {name: _verdict("PreScore", status) for name in verdicts}
            return verdicts, None, None
    raw: dict[str, int] = {}
    for node in feasible:
        value, status = plugin.score(state, pod, node)
        if status is not None and not status.is_success():
            verdicts[node.name] = _verdict("Score", status)
        else:
            raw[node.name] = value
    scores = [NodeScore(name, value) for name, value in raw.items()]
    extensions = plugin.score_extensions()
    if extensions is not None:
        extensions.normalize_score(state, pod, scores)
    return verdicts, raw, tuple(each.score for each in scores)


def check_signature_promise(
    plugin: Plugin, pods: Sequence[Pod], nodes: Sequence[NodeInfo], *, alone: bool = True
) -> int:
    """Check ``plugin``'s ``SignPlugin`` promise over ``pods`` and ``nodes``:
    pods whose ``sign_pod`` fragments are equal get equal PreFilter/Filter
    verdicts and equal Score results (raw per node, and normalized) on every
    node, in a cycle over all ``nodes``; with ``alone``, also each pod's
    result for a node in a cycle of that node alone equals its result among
    all of them (a reused result was computed in another cycle, over other
    nodes). Pods the plugin does not sign (None) are left out.

    Returns the number of comparisons made (pod pairs x nodes); raises
    AssertionError naming the pods, the node and both results when the
    promise is broken, or when no two pods share a fragment (the check would
    prove nothing: add pods that differ only in what the plugin ignores).
    TypeError when ``plugin`` does not implement SignPlugin."""
    if not isinstance(plugin, SignPlugin):
        raise TypeError(f"plugin {plugin.name!r} does not implement SignPlugin")
    groups: dict[Hashable, list[Pod]] = {}
    for pod in pods:
        fragment = plugin.sign_pod(pod)
        if fragment is not None:
            groups.setdefault(fragment, []).append(pod)
    compared = 0
    for fragment, group in groups.items():
        outcomes = [_cycle(plugin, pod, nodes) for pod in group]
        first, (verdicts, raw, normalized) = group[0], outcomes[0]
        for pod, (other_verdicts, other_raw, other_normalized) in zip(
            group[1:], outcomes[1:], strict=True
        ):
            pair = f"{plugin.name}: pods {first.key} and {pod.key} (signature {fragment!r})"
            for node in nodes:
                compared += 1
                if verdicts[node.name] != other_verdicts[node.name]:
                    raise AssertionError(
                        f"{pair} get different verdicts on node {node.name}: "
                        f"{verdicts[node.name]} and {other_verdicts[node.name]}"
                    )
                mine = None if raw is None else raw.get(node.name)
                theirs = None if other_raw is None else other_raw.get(node.name)
                if mine != theirs:
                    raise AssertionError(
                        f"{pair} get different scores on node {node.name}: {mine} and {theirs}"
                    )
            if normalized != other_normalized:
                raise AssertionError(
                    f"{pair} get different normalized scores: {normalized} and {other_normalized}"
                )
        if alone:
            for pod, (all_verdicts, all_raw, _) in zip(group, outcomes, strict=True):
                for node in nodes:
                    one_verdicts, one_raw, _ = _cycle(plugin, pod, [node])
                    if one_verdicts[node.name] != all_verdicts[node.name] or (
                        None if one_raw is None else one_raw.get(node.name)
                    ) != (None if all_raw is None else all_raw.get(node.name)):
                        raise AssertionError(
                            f"{plugin.name}: pod {pod.key} on node {node.name} alone gets "
                            f"{one_verdicts[node.name]} (score {one_raw}), among all nodes "
                            f"{all_verdicts[node.name]} (score {all_raw})"
                        )
    if not compared:
        raise AssertionError(
            f"{plugin.name}: no two of the {len(pods)} pods share a signature; "
            "the check proves nothing"
        )
    return compared
