"""Public test helpers for plugin authors: build pods and nodes, build a
plugin from its ``PluginSpec`` with arguments validated exactly as a
``KubeSchedulerConfiguration`` would, and run its Filter or Score the way the
framework does, without a cluster.

    from scheduler.testing import build_plugin, make_node, make_pod, run_filter

    plugin = build_plugin(SPEC, {"label": "pool", "allowed": ["blue"]})
    status = run_filter(plugin, make_pod("p"), make_node("n", labels={"pool": "red"}))

``PodBuilder``/``NodeBuilder`` (``scheduler.testing.builders``) build any pod or
node the scheduler's own tests build; ``ConfigError`` is what ``build_plugin``
raises for arguments a configuration would refuse.

A stable, pinned API (``__all__``, checked with ``scheduler.framework``'s by
``tests/unit/framework/test_public_api.py``; used by ``examples/plugin-package``'s
own tests); everything returned is the framework's own type (``Pod``,
``NodeInfo``, ``Status``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    Status,
)
from scheduler.testing.builders import NodeBuilder, PodBuilder

__all__ = [
    "ConfigError",
    "NodeBuilder",
    "PodBuilder",
    "build_plugin",
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
