"""What the queue needs to know about one profile, and the PreEnqueue gate.

``QueueProfile`` holds the profile's PreEnqueue plugins (in configured order)
and, per plugin, the cluster events it registered (``EventsToRegister``).

Registration rules (upstream ``fillEventToPluginMap``):
- a plugin *absent* from ``events_by_plugin`` did not implement
  EnqueueExtensions: it counts as registered for every event of every
  resource, with no hint (always Queue);
- a plugin present with an *empty* sequence registered nothing: pods it
  rejects move only on wildcard events (timeout flush, ForceActivate).

PreEnqueue gating: the previous gating plugin runs first, then the others in
order, stopping at the first non-success. The failing plugin becomes the pod's
``gating_plugin`` (also added to ``unschedulable_plugins``) and its registered
events become ``gating_plugin_events``: only those events can release the pod.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, Resource
from scheduler.framework.interfaces import PreEnqueuePlugin
from scheduler.framework.status import Status, is_success
from scheduler.framework.types import QueuedPodInfo
from scheduler.queue.metrics import QueueMetrics

log = logging.getLogger(__name__)

# Every resource with every action; Pod covers assigned and unscheduled pods.
ALL_EVENTS: tuple[ClusterEventWithHint, ...] = tuple(
    ClusterEventWithHint(ClusterEvent(resource, ActionType.ALL))
    for resource in Resource
    if resource not in (Resource.WILDCARD, Resource.ASSIGNED_POD, Resource.UNSCHEDULED_POD)
)

_ALL_GATE_EVENTS = tuple(r.event for r in ALL_EVENTS)


@dataclass(frozen=True)
class QueueProfile:
    pre_enqueue: Sequence[PreEnqueuePlugin] = ()
    events_by_plugin: Mapping[str, Sequence[ClusterEventWithHint]] = field(default_factory=dict)
    _gate_events: dict[str, tuple[ClusterEvent, ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def events_of(self, plugin: str) -> Sequence[ClusterEventWithHint]:
        """The plugin's registrations; every event if it registered none at all."""
        return self.events_by_plugin.get(plugin, ALL_EVENTS)

    def gate_events(self, plugin: str) -> tuple[ClusterEvent, ...]:
        """The events that may release a pod ``plugin`` gated: one tuple per
        plugin, shared by every pod it gates (the queue caches by identity)."""
        events = self._gate_events.get(plugin)
        if events is None:
            events = self._gate_events[plugin] = tuple(r.event for r in self.events_of(plugin))
        return events


def run_pre_enqueue(
    profile: QueueProfile | None, pinfo: QueuedPodInfo, metrics: QueueMetrics
) -> None:
    """Gate or ungate ``pinfo`` in place (see the module docstring)."""
    plugins = list(profile.pre_enqueue) if profile is not None else []
    if gating := pinfo.gating_plugin:
        first = [plugin for plugin in plugins if plugin.name == gating]
        plugins = first + [plugin for plugin in plugins if plugin.name != gating]
    for plugin in plugins:
        status = _call(plugin, pinfo)
        if is_success(status):
            continue
        if plugin.name not in pinfo.unschedulable_plugins:
            pinfo.unschedulable_plugins.add(plugin.name)
            metrics.unschedulable_plugin(plugin.name, pinfo.pod.scheduler_name, 1)
        pinfo.gating_plugin = plugin.name
        pinfo.gating_plugin_events = (
            profile.gate_events(plugin.name) if profile else _ALL_GATE_EVENTS
        )
        return
    pinfo.gating_plugin = ""
    pinfo.gating_plugin_events = ()


def _call(plugin: PreEnqueuePlugin, pinfo: QueuedPodInfo) -> Status | None:
    try:
        status = plugin.pre_enqueue(pinfo.pod)
    except Exception as error:
        log.exception("PreEnqueue plugin %s failed on pod %s", plugin.name, pinfo.key)
        return Status.as_error(error)
    if status is not None and status.is_error():
        log.error("PreEnqueue plugin %s: error on pod %s: %s", plugin.name, pinfo.key, status)
    return status
