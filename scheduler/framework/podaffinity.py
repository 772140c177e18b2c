"""Pod (anti-)affinity terms, parsed once per pod version (upstream ``PodInfo``'s
``RequiredAffinityTerms``... and ``fwk.AffinityTerm``).

An ``AffinityTerm`` selects pods by labels within a set of namespaces: the
term's ``namespaces`` plus those whose labels match its ``namespaceSelector``;
with neither given, the owning pod's own namespace. ``matchLabelKeys`` and
``mismatchLabelKeys`` add ``key In (value)`` / ``key NotIn (value)`` with the
owning pod's label value, as the API server does on pod creation; a
requirement the API server already added is not added twice, so the result
is the same whether or not the pod went through it.

Only ``requiredDuringSchedulingIgnoredDuringExecution`` and
``preferredDuringSchedulingIgnoredDuringExecution`` exist (as upstream). A
selector that cannot be parsed leaves ``error`` set (and its term out), which
the InterPodAffinity plugin reports for the incoming pod, as upstream fails
``NewPodInfo``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from scheduler.framework.labels import (
    NOTHING,
    LabelSelectorError,
    Operator,
    Requirement,
    Selector,
    parse_label_selector,
)

_EMPTY: Mapping[str, Any] = {}


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    namespaces: frozenset[str]
    selector: Selector
    topology_key: str
    namespace_selector: Selector

    def matches(
        self, namespace: str, labels: Mapping[str, str], ns_labels: Mapping[str, str]
    ) -> bool:
        """Upstream ``AffinityTerm.Matches``: the pod (by namespace and labels)
        is selected; ``ns_labels`` are the labels of the pod's namespace
        (empty when not known)."""
        if namespace in self.namespaces or self.namespace_selector.matches(ns_labels):
            return self.selector.matches(labels)
        return False

    def with_selected_namespaces(self, names: Iterable[str]) -> AffinityTerm:
        """Upstream ``mergeAffinityTermNamespacesIfNotEmpty``: fold the names the
        namespace selector selects into ``namespaces``. An empty selector (all
        namespaces) is kept as it is."""
        if self.namespace_selector.empty:
            return self
        return replace(
            self, namespaces=self.namespaces | frozenset(names), namespace_selector=NOTHING
        )


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


@dataclass(frozen=True, slots=True)
class PodAffinityTerms:
    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...] = ()
    error: str = ""

    def __bool__(self) -> bool:
        return bool(
            self.required_affinity
            or self.required_anti_affinity
            or self.preferred_affinity
            or self.preferred_anti_affinity
        )


NO_POD_AFFINITY = PodAffinityTerms()


def parse_pod_affinity(
    affinity: Mapping[str, Any] | None, namespace: str, labels: Mapping[str, str]
) -> PodAffinityTerms:
    """The terms of a pod's ``spec.affinity`` (podAffinity, podAntiAffinity)."""
    if not affinity:
        return NO_POD_AFFINITY
    pod_affinity = affinity.get("podAffinity") or _EMPTY
    anti_affinity = affinity.get("podAntiAffinity") or _EMPTY
    if not pod_affinity and not anti_affinity:
        return NO_POD_AFFINITY
    errors: list[str] = []
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    preferred = "preferredDuringSchedulingIgnoredDuringExecution"
    return PodAffinityTerms(
        required_affinity=_terms(pod_affinity.get(required), namespace, labels, errors),
        required_anti_affinity=_terms(anti_affinity.get(required), namespace, labels, errors),
        preferred_affinity=_weighted(pod_affinity.get(preferred), namespace, labels, errors),
        preferred_anti_affinity=_weighted(anti_affinity.get(preferred), namespace, labels, errors),
        error="; ".join(errors),
    )


def _terms(
    raw: Iterable[Mapping[str, Any]] | None,
    namespace: str,
    labels: Mapping[str, str],
    errors: list[str],
) -> tuple[AffinityTerm, ...]:
    terms = []
    for item in raw or ():
        term = _term(item, namespace, labels, errors)
        if term is not None:
            terms.append(term)
    return tuple(terms)


def _weighted(
    raw: Iterable[Mapping[str, Any]] | None,
    namespace: str,
    labels: Mapping[str, str],
    errors: list[str],
) -> tuple[WeightedAffinityTerm, ...]:
    terms = []
    for item in raw or ():
        term = _term(item.get("podAffinityTerm") or _EMPTY, namespace, labels, errors)
        if term is not None:
            terms.append(WeightedAffinityTerm(term, int(item.get("weight") or 0)))
    return tuple(terms)


def _term(
    raw: Mapping[str, Any], namespace: str, labels: Mapping[str, str], errors: list[str]
) -> AffinityTerm | None:
    raw_selector = raw.get("labelSelector")
    raw_ns_selector = raw.get("namespaceSelector")
    try:
        selector = parse_label_selector(raw_selector)
        namespace_selector = parse_label_selector(raw_ns_selector)
    except LabelSelectorError as error:
        errors.append(str(error))
        return None
    if raw_selector is not None:
        selector = _with_label_keys(selector, raw.get("matchLabelKeys"), Operator.IN, labels)
        selector = _with_label_keys(selector, raw.get("mismatchLabelKeys"), Operator.NOT_IN, labels)
    names = raw.get("namespaces") or ()
    namespaces = (
        frozenset(names) if names or raw_ns_selector is not None else frozenset((namespace,))
    )
    return AffinityTerm(
        namespaces=namespaces,
        selector=selector,
        topology_key=raw.get("topologyKey") or "",
        namespace_selector=namespace_selector,
    )


def _with_label_keys(
    selector: Selector,
    keys: Iterable[str] | None,
    operator: Operator,
    labels: Mapping[str, str],
) -> Selector:
    added = []
    for key in keys or ():
        value = labels.get(key)
        if value is None:
            continue
        requirement = Requirement(key, operator, frozenset((value,)))
        if requirement not in selector.requirements:
            added.append(requirement)
    return selector.add(added) if added else selector
