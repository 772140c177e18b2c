"""Which unschedulable pods an assigned pod's arrival or change may concern.

Upstream (``getUnschedulablePodsWithCrossTopologyTerm``) pre-filters the pods
that an assigned-pod Add/Update event is evaluated against: a pod-level event
can only help a pod whose required pod-affinity terms select the assigned pod,
or a pod rejected by PodTopologySpread in the same namespace. Everything else
goes through the queueing hints as usual.

Namespace labels are not available here, so a term with a non-empty
``namespaceSelector`` is taken to match every namespace: that only lets more
pods reach their hints, never fewer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.objects import Pod
from scheduler.framework.types import QueuedPodInfo

# The plugin's configured name; the engine may not import plugins.
POD_TOPOLOGY_SPREAD = "PodTopologySpread"


def concerns(pinfo: QueuedPodInfo, assigned: Pod) -> bool:
    """Whether an event about ``assigned`` may make ``pinfo``'s pod schedulable."""
    pod = pinfo.pod
    if POD_TOPOLOGY_SPREAD in pinfo.unschedulable_plugins and assigned.namespace == pod.namespace:
        return True
    pod_affinity = (pod.affinity or {}).get("podAffinity") or {}
    terms = pod_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
    return any(_term_matches(term, pod, assigned) for term in terms)


def _term_matches(term: Mapping[str, Any], owner: Pod, candidate: Pod) -> bool:
    namespaces = term.get("namespaces") or ()
    namespace_selector = term.get("namespaceSelector")
    if namespaces or namespace_selector is not None:
        in_namespace = candidate.namespace in namespaces or namespace_selector is not None
    else:
        in_namespace = candidate.namespace == owner.namespace
    return in_namespace and selector_matches(term.get("labelSelector"), candidate.labels)


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector against labels; None selects nothing, ``{}`` everything."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    return all(_requirement(expr, labels) for expr in selector.get("matchExpressions") or ())


def _requirement(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key = expression.get("key", "")
    operator = expression.get("operator")
    values = expression.get("values") or ()
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return False
