"""``/metrics/resources``: kube-scheduler's per-pod resource metrics,
``kube_pod_resource_request`` and ``kube_pod_resource_limit``, with upstream's
labels (namespace, pod, node, scheduler, priority, resource, unit) and units
(``cores`` for cpu; ``bytes`` for memory, storage, ephemeral-storage and
hugepages; ``integer`` for attachable volumes; empty otherwise).

Every non-terminal pod the informer holds counts, ours or not, as upstream's
collector lists every pod; a zero value is not written. A pod whose
quantities cannot be read is left out (it is reported where it is
scheduled). Collected at scrape time from the store's current objects: no
state, nothing to keep in step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from scheduler.framework.quantity import QuantityError
from scheduler.framework.resource import CPU, Resource, pod_limits, pod_requests

LABELS = ("namespace", "pod", "node", "scheduler", "priority", "resource", "unit")
_BYTES = frozenset({"memory", "storage", "ephemeral-storage"})
_DEFAULT_SCHEDULER = "default-scheduler"


def unit(resource: str) -> str:
    if resource == CPU:
        return "cores"
    if resource in _BYTES or resource.startswith("hugepages-"):
        return "bytes"
    if resource.startswith("attachable-volumes-"):
        return "integer"
    return ""


def _value(resources: Resource, name: str) -> float:
    amount = resources.get(name)
    return amount / 1000 if name == CPU else float(amount)


def samples(
    pods: Iterable[Mapping[str, Any]],
) -> Iterator[tuple[str, tuple[str, ...], float]]:
    """(``request``/``limit``, label values, value) for every pod and resource."""
    for pod in pods:
        spec = pod.get("spec") or {}
        metadata = pod.get("metadata") or {}
        try:
            totals = (("request", pod_requests(spec)), ("limit", pod_limits(spec)))
        except QuantityError:
            continue
        priority = spec.get("priority")
        fixed = (
            str(metadata.get("namespace") or ""),
            str(metadata.get("name") or ""),
            str(spec.get("nodeName") or ""),
            str(spec.get("schedulerName") or _DEFAULT_SCHEDULER),
            "" if priority is None else str(priority),
        )
        for kind, resources in totals:
            for name in resources.names():
                yield kind, (*fixed, name, unit(name)), _value(resources, name)


class PodResourceCollector(Collector):
    def __init__(self, pods: Callable[[], Iterable[Mapping[str, Any]]]) -> None:
        self._pods = pods

    def describe(self) -> Iterable[Metric]:
        return []

    def collect(self) -> Iterable[Metric]:
        request = GaugeMetricFamily(
            "kube_pod_resource_request",
            "Resources requested by workloads on the cluster, broken down by pod. This shows "
            "the resource usage the scheduler and kubelet expect per pod for resources along "
            "with the unit for the resource if any.",
            labels=LABELS,
        )
        limit = GaugeMetricFamily(
            "kube_pod_resource_limit",
            "Resources limit for workloads on the cluster, broken down by pod. This shows the "
            "resource usage the scheduler and kubelet expect per pod for resources along with "
            "the unit for the resource if any.",
            labels=LABELS,
        )
        for kind, labels, value in samples(self._pods()):
            (request if kind == "request" else limit).add_metric(list(labels), value)
        return [request, limit]
