"""Which pooled pods a cluster event can concern, without asking every one.

Upstream's ``movePodsToActiveOrBackoffQueue`` evaluates every pooled pod on
every event; at a few microseconds per pod in Python, a burst of events over
thousands of waiting pods (the resourceclaim controller creating one claim
per pod) costs seconds. ``PoolIndex`` narrows the walk to the pods whose
verdict could differ from SKIP, so the result is the same as the full walk:

- by rejector plugin: a pod is considered only if one of its rejector
  plugins (unschedulable or pending) registered for the event in some
  profile, or if it has none (failed with an error: always requeued);
- by ``HintInterest``: when every matching registration of a plugin carries
  an interest, only that plugin's pods whose interest keys meet the event's
  keys are considered (the interest's promise: the others answer SKIP).

Invariants: the index holds exactly the pooled entries as they were when
last added (``UnschedulablePool.add`` re-indexes; whoever changes a pooled
entry's pod or rejectors adds it again); a pod whose keys cannot be computed
is indexed as "any key" for that interest, and an event whose keys cannot be
computed considers every pod of the plugin. Wildcard events consider all.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Hashable, Iterable, Mapping
from typing import TypeVar

from scheduler.framework.events import ClusterEvent, HintInterest
from scheduler.framework.types import QueuedPodInfo
from scheduler.queue.profile import QueueProfile

log = logging.getLogger(__name__)

_NO_REJECTOR = ""  # the index entry of pods without rejector plugins
_ANY = object()  # the interest key of a pod whose keys could not be computed
_K = TypeVar("_K")
# pod key -> (its rejector entries, its keys per interest)
_Entry = tuple[tuple[str, ...], tuple[tuple[str, frozenset[object]], ...]]


def interests_of(profiles: Mapping[str, QueueProfile]) -> dict[str, HintInterest]:
    """Every interest some registration of some profile carries, by name."""
    found: dict[str, HintInterest] = {}
    for profile in profiles.values():
        for registrations in profile.events_by_plugin.values():
            for registered in registrations:
                if registered.interest is not None:
                    found.setdefault(registered.interest.name, registered.interest)
    return found


class PoolIndex:
    def __init__(self, profiles: Mapping[str, QueueProfile]) -> None:
        self._profiles = profiles
        self._interests = interests_of(profiles)
        self._by_plugin: dict[str, set[str]] = {}
        self._by_key: dict[str, dict[object, set[str]]] = {name: {} for name in self._interests}
        self._entries: dict[str, _Entry] = {}

    def add(self, pinfo: QueuedPodInfo) -> None:
        key = pinfo.key
        self.remove(key)
        plugins = tuple(pinfo.unschedulable_plugins | pinfo.pending_plugins) or (_NO_REJECTOR,)
        for plugin in plugins:
            self._by_plugin.setdefault(plugin, set()).add(key)
        keyed = tuple(
            (name, _pod_keys(interest, pinfo)) for name, interest in self._interests.items()
        )
        for name, names in keyed:
            index = self._by_key[name]
            for item in names:
                index.setdefault(item, set()).add(key)
        self._entries[key] = (plugins, keyed)

    def remove(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        plugins, keyed = entry
        for plugin in plugins:
            _discard(self._by_plugin, plugin, key)
        for name, names in keyed:
            index = self._by_key[name]
            for item in names:
                _discard(index, item, key)

    def candidates(self, event: ClusterEvent, old: object, new: object) -> set[str] | None:
        """The pooled pod keys the event may concern; None for all of them."""
        if event.is_wildcard():
            return None
        found = set(self._by_plugin.get(_NO_REJECTOR, ()))
        for plugin, keys in self._by_plugin.items():
            if plugin == _NO_REJECTOR or not keys:
                continue
            interests = self._interests_for(plugin, event)
            if not interests:
                if interests is None:
                    found |= keys
                continue
            interested = self._interested(interests, old, new)
            found |= keys if interested is None else keys & interested
        return found

    def _interests_for(self, plugin: str, event: ClusterEvent) -> list[HintInterest] | None:
        """The interests of the plugin's registrations matching the event in
        any profile; None if one of them has none (every pod of the plugin)."""
        interests: list[HintInterest] = []
        for profile in self._profiles.values():
            for registered in profile.events_of(plugin):
                if not registered.event.matches(event):
                    continue
                if registered.interest is None:
                    return None
                interests.append(registered.interest)
        return interests

    def _interested(
        self, interests: Iterable[HintInterest], old: object, new: object
    ) -> set[str] | None:
        """The pods some interest's keys meet the event's in; None for all."""
        pods: set[str] = set()
        for interest in interests:
            names = _event_keys(interest, old, new)
            if names is None:
                return None
            index = self._by_key[interest.name]
            pods |= index.get(_ANY, set())
            for item in names:
                pods |= index.get(item, set())
        return pods


def _pod_keys(interest: HintInterest, pinfo: QueuedPodInfo) -> frozenset[object]:
    try:
        return frozenset(interest.pod_keys(pinfo.pod))
    except Exception:
        log.warning(
            "pod keys of interest %s failed for pod %s: it is asked on every event",
            interest.name,
            pinfo.key,
            exc_info=True,
        )
        return frozenset((_ANY,))


def _event_keys(interest: HintInterest, old: object, new: object) -> Collection[Hashable] | None:
    try:
        return interest.event_keys(old, new)
    except Exception:
        log.warning(
            "event keys of interest %s failed: every pod is asked", interest.name, exc_info=True
        )
        return None


def _discard(index: dict[_K, set[str]], item: _K, key: str) -> None:
    keys = index.get(item)
    if keys is not None:
        keys.discard(key)
        if not keys:
            del index[item]
