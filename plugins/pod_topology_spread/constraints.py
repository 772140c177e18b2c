"""Spread constraints as the plugin evaluates them (upstream ``common.go``).

A pod's own ``topologySpreadConstraints`` of one action (DoNotSchedule for
Filter, ScheduleAnyway for Score), each with its label selector parsed and,
with ``matchLabelKeys``, narrowed to the pod's values of those keys. A pod
without constraints gets the profile's default constraints, selecting the pods
of the same services and controller (ReplicationController, ReplicaSet,
StatefulSet); with no such selector it gets none.

Counting (upstream ``countPodsMatchSelector``): pods in the incoming pod's
namespace, not being deleted, matching the selector; an empty selector counts
nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from plugins.pod_topology_spread.args import (
    DefaultConstraint,
    NodeInclusionPolicy,
    WhenUnsatisfiable,
)
from scheduler.framework import Node, ObjectStore, Pod, Taint, Toleration
from scheduler.framework.labels import Selector, parse_label_selector, selector_from_set

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_ZONE = "topology.kubernetes.io/zone"

HONOR = NodeInclusionPolicy.HONOR
IGNORE = NodeInclusionPolicy.IGNORE

_EMPTY: Mapping[str, Any] = {}
_HARD_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


@dataclass(frozen=True, slots=True)
class Constraint:
    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    node_affinity_policy: NodeInclusionPolicy = HONOR
    node_taints_policy: NodeInclusionPolicy = IGNORE

    def filters_nodes(self, pod: Pod) -> bool:
        """Whether ``includes`` can be False for this pod on some node (else
        the hot loops skip the call)."""
        if self.node_affinity_policy is HONOR and not pod.required_affinity.empty:
            return True
        return self.node_taints_policy is HONOR

    def includes(self, pod: Pod, node: Node) -> bool:
        """Upstream ``matchNodeInclusionPolicies``: does ``node`` count?"""
        if self.node_affinity_policy is HONOR and not pod.required_affinity.matches(
            node.name, node.labels
        ):
            return False
        return not (
            self.node_taints_policy is HONOR
            and not tolerates_hard_taints(node.taints, pod.tolerations)
        )


SYSTEM_DEFAULT_CONSTRAINTS = (
    DefaultConstraint(
        max_skew=3,
        topology_key=LABEL_HOSTNAME,
        when_unsatisfiable=WhenUnsatisfiable.SCHEDULE_ANYWAY,
    ),
    DefaultConstraint(
        max_skew=5, topology_key=LABEL_ZONE, when_unsatisfiable=WhenUnsatisfiable.SCHEDULE_ANYWAY
    ),
)


def _policy(raw: object) -> NodeInclusionPolicy | None:
    try:
        return NodeInclusionPolicy(str(raw))
    except ValueError:
        return None


def filter_constraints(
    raw_constraints: Iterable[Mapping[str, Any]],
    pod_labels: Mapping[str, str],
    action: str,
    selector: Selector | None = None,
) -> tuple[Constraint, ...]:
    """Upstream ``filterTopologySpreadConstraints``: the constraints of one
    action. ``selector`` replaces each constraint's own (default constraints)."""
    result = []
    for raw in raw_constraints:
        if raw.get("whenUnsatisfiable") != action:
            continue
        parsed = parse_label_selector(raw.get("labelSelector")) if selector is None else selector
        keys = raw.get("matchLabelKeys") or ()
        match_labels = {key: pod_labels[key] for key in keys if key in pod_labels}
        if match_labels:
            parsed = merge_label_set(match_labels, parsed)
        min_domains = raw.get("minDomains")
        result.append(
            Constraint(
                max_skew=int(raw.get("maxSkew") or 0),
                topology_key=raw.get("topologyKey") or "",
                selector=parsed,
                min_domains=1 if min_domains is None else int(min_domains),
                node_affinity_policy=_policy(raw.get("nodeAffinityPolicy")) or HONOR,
                node_taints_policy=_policy(raw.get("nodeTaintsPolicy")) or IGNORE,
            )
        )
    return tuple(result)


def merge_label_set(match_labels: Mapping[str, str], selector: Selector) -> Selector:
    """Upstream ``mergeLabelSetWithSelector``: the selector that "selects
    nothing" stays so; otherwise the labels' equalities plus its requirements."""
    if selector.nothing:
        return selector
    return selector_from_set(match_labels).add(selector.requirements)


def default_constraint_dicts(
    constraints: Sequence[DefaultConstraint],
) -> tuple[dict[str, Any], ...]:
    return tuple(c.model_dump(by_alias=True, exclude_none=True, mode="json") for c in constraints)


class DefaultSelector:
    """Upstream ``helper.DefaultSelector``: the labels of the pod's services
    and the selector of its controller, from the informers' stores."""

    def __init__(
        self,
        services: ObjectStore,
        replication_controllers: ObjectStore,
        replica_sets: ObjectStore,
        stateful_sets: ObjectStore,
    ) -> None:
        self._services = services
        self._rcs = replication_controllers
        self._rss = replica_sets
        self._sss = stateful_sets

    def __call__(self, pod: Pod) -> Selector:
        label_set: dict[str, str] = {}
        for service in self._services.list():
            metadata = service.get("metadata") or _EMPTY
            if metadata.get("namespace") != pod.namespace:
                continue
            selected = (service.get("spec") or _EMPTY).get("selector")
            if selected is None:
                continue
            if all(pod.labels.get(key) == value for key, value in selected.items()):
                label_set.update(selected)
        selector = selector_from_set(label_set)
        owner = controller_of(pod)
        if owner is None:
            return selector
        api_version, kind, name = owner
        key = f"{pod.namespace}/{name}"
        if api_version == "v1" and kind == "ReplicationController":
            rc = self._rcs.get(key)
            if rc is not None:
                label_set.update((rc.get("spec") or _EMPTY).get("selector") or _EMPTY)
                selector = selector_from_set(label_set)
        elif api_version == "apps/v1" and kind in ("ReplicaSet", "StatefulSet"):
            store = self._rss if kind == "ReplicaSet" else self._sss
            owner_object = store.get(key)
            if owner_object is not None:
                selector = _add_selector(
                    selector, (owner_object.get("spec") or _EMPTY).get("selector")
                )
        return selector


def _add_selector(selector: Selector, raw: Mapping[str, Any] | None) -> Selector:
    try:
        other = parse_label_selector(raw)
    except ValueError:
        return selector
    if other.nothing:
        return selector
    return selector.add(other.requirements)


def controller_of(pod: Pod) -> tuple[str, str, str] | None:
    """(apiVersion, kind, name) of the pod's controlling owner, if any."""
    for ref in (pod.raw.get("metadata") or _EMPTY).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref.get("apiVersion") or "", ref.get("kind") or "", ref.get("name") or ""
    return None


def tolerates_hard_taints(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> bool:
    """No NoSchedule/NoExecute taint is left untolerated (``nodeTaintsPolicy: Honor``)."""
    for taint in taints:
        if taint.effect in _HARD_EFFECTS and not any(t.tolerates(taint) for t in tolerations):
            return False
    return True


def node_has_all_keys(labels: Mapping[str, str], constraints: Sequence[Constraint]) -> bool:
    """Upstream ``nodeLabelsMatchSpreadConstraints``."""
    return all(constraint.topology_key in labels for constraint in constraints)


def all_keys(labels: Mapping[str, str], keys: tuple[str, ...]) -> bool:
    """``node_has_all_keys`` with the keys precomputed (hot loops)."""
    for key in keys:  # noqa: SIM110 - hot path, no generator
        if key not in labels:
            return False
    return True


def count_matching(pods: Iterable[Pod], selector: Selector, namespace: str) -> int:
    """Upstream ``countPodsMatchSelector``."""
    if selector.empty:
        return 0
    count = 0
    for pod in pods:
        if pod.deleting or pod.namespace != namespace:
            continue
        if selector.matches(pod.labels):
            count += 1
    return count


def pod_matches_any(constraints: Sequence[Constraint], labels: Mapping[str, str]) -> bool:
    """Upstream ``podLabelsMatchSpreadConstraints``."""
    return any(constraint.selector.matches(labels) for constraint in constraints)
