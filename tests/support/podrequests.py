"""An independent oracle for what a pod requests and what a node allocates.

The chaos suite's overcommit check must not share the scheduler's accounting,
so this module re-derives upstream's rules (``resourcehelper.PodRequests``)
straight from the API's JSON, with its own quantity parser:

* app containers are summed; restartable init containers (``restartPolicy:
  Always``, sidecars) accumulate and run beside everything after them; each
  other init container needs its own request plus the sidecars started before
  it; the pod needs the max of the two, plus ``spec.overhead``;
* pod-level ``spec.resources.requests`` replace the container total for each
  resource they set (cpu, memory, hugepages-*), overhead still added;
* in-place resize: a container counts the max of its spec request and what the
  kubelet allocated (``status.containerStatuses[].allocatedResources``, else
  ``.resources.requests``), except while the resize is infeasible, when the
  allocated value alone counts.

``node_view_differences`` checks a scheduler's view of its nodes (its
``/debug/cache`` report's ``cache`` part: labels, taints, allocatable, summed
requests and pods per node) against the same facts computed here from the
API's node and pod objects.

Pure: no import from ``scheduler`` (``imports_scheduler`` checks this module's
own source, so the chaos table can say so).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

Obj = Mapping[str, Any]
Requests = dict[str, int]  # cpu in millicores, everything else in units (bytes)

_SUFFIXES = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
POD_LEVEL = ("cpu", "memory")  # plus every hugepages-* name


def quantity(text: object) -> Decimal:
    """The value of a Kubernetes quantity such as ``300m``, ``1.5Gi``, ``2e3``."""
    raw = str(text).strip()
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if suffix and raw.endswith(suffix):
            number, scale = raw[: -len(suffix)], _SUFFIXES[suffix]
            break
    else:
        number, scale = raw, Decimal(1)
    try:
        value = Decimal(number) * scale
    except InvalidOperation as error:
        raise ValueError(f"not a quantity: {text!r}") from error
    if not value.is_finite():
        raise ValueError(f"not a quantity: {text!r}")
    return value


def amount(name: str, text: object) -> int:
    """``name``'s quantity in the oracle's unit, rounded up as upstream does."""
    value = quantity(text)
    return math.ceil(value * 1000) if name == "cpu" else math.ceil(value)


def _requests(resources: Obj | None, key: str = "requests") -> Requests:
    found = (resources or {}).get(key) or {}
    return {name: amount(name, value) for name, value in found.items()}


def _add(into: Requests, other: Requests) -> None:
    for name, value in other.items():
        into[name] = into.get(name, 0) + value


def _maximum(into: Requests, other: Requests) -> None:
    for name, value in other.items():
        into[name] = max(into.get(name, 0), value)


def _infeasible(pod: Obj) -> bool:
    status = pod.get("status") or {}
    if status.get("resize") == "Infeasible":
        return True
    return any(
        c.get("type") == "PodResizePending" and c.get("reason") == "Infeasible"
        for c in status.get("conditions") or ()
    )


def _container(pod: Obj, container: Obj, statuses: Mapping[str, Obj]) -> Requests:
    spec = _requests(container.get("resources"))
    status = statuses.get(str(container.get("name")))
    if status is None:
        return spec
    allocated = status.get("allocatedResources")
    actual = (
        {name: amount(name, value) for name, value in allocated.items()}
        if allocated
        else _requests(status.get("resources"))
    )
    if not actual:
        return spec
    if _infeasible(pod):
        return actual
    merged = dict(spec)
    _maximum(merged, actual)
    return merged


def pod_requests(pod: Obj) -> Requests:
    """What ``pod`` requests, by upstream's rules (see the module docstring)."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    statuses = {
        str(s.get("name")): s
        for s in [
            *(status.get("containerStatuses") or ()),
            *(status.get("initContainerStatuses") or ()),
        ]
    }
    total: Requests = {}
    for container in spec.get("containers") or ():
        _add(total, _container(pod, container, statuses))
    sidecars: Requests = {}
    init: Requests = {}
    for container in spec.get("initContainers") or ():
        own = _container(pod, container, statuses)
        if container.get("restartPolicy") == "Always":
            _add(sidecars, own)
            _maximum(init, sidecars)
        else:
            need = dict(own)
            _add(need, sidecars)
            _maximum(init, need)
    _add(total, sidecars)
    _maximum(total, init)
    pod_level = _requests(spec.get("resources"))
    if pod_level:
        actual = {
            name: amount(name, value)
            for name, value in (status.get("allocatedResources") or {}).items()
        } or _requests(status.get("resources"))
        if actual and _infeasible(pod):
            pod_level = actual
        else:
            _maximum(pod_level, {k: v for k, v in actual.items() if k in pod_level})
    for name, value in pod_level.items():
        if name in POD_LEVEL or name.startswith("hugepages-"):
            total[name] = value
    _add(total, {name: amount(name, value) for name, value in (spec.get("overhead") or {}).items()})
    return total


def allocatable(node: Obj) -> Requests:
    status = node.get("status") or {}
    found = status.get("allocatable") or status.get("capacity") or {}
    return {name: amount(name, value) for name, value in found.items()}


def _terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def node_usage(pods: Iterable[Obj]) -> dict[str, Requests]:
    """Node name -> the sum of its non-terminal pods' requests, with ``pods``
    counting the pods themselves."""
    usage: dict[str, Requests] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or _terminal(pod):
            continue
        used = usage.setdefault(node, {})
        _add(used, pod_requests(pod))
        used["pods"] = used.get("pods", 0) + 1
    return usage


def overcommitted(nodes: Iterable[Obj], pods: Iterable[Obj]) -> dict[str, str]:
    """Node name -> what exceeds its allocatable, for each overcommitted node
    of ``nodes`` (pods on other nodes are not counted here: see
    ``bound_elsewhere``)."""
    usage = node_usage(pods)
    known = {str(node["metadata"]["name"]): allocatable(node) for node in nodes}
    problems = {}
    for name, used in usage.items():
        limits = known.get(name)
        if limits is None:
            continue
        over = {
            resource: f"{value} > {limits.get(resource, 0)}"
            for resource, value in used.items()
            if value > limits.get(resource, 0)
        }
        if over:
            problems[name] = ", ".join(f"{k} {v}" for k, v in sorted(over.items()))
    return problems


def bound_elsewhere(nodes: Iterable[Obj], pods: Iterable[Obj]) -> list[str]:
    """Names of the non-terminal pods bound to a node not among ``nodes``."""
    known = {str(node["metadata"]["name"]) for node in nodes}
    return sorted(
        str(pod["metadata"]["name"])
        for pod in pods
        if (pod.get("spec") or {}).get("nodeName")
        and pod["spec"]["nodeName"] not in known
        and not _terminal(pod)
    )


def _nonzero(amounts: Mapping[str, int]) -> dict[str, int]:
    return {name: value for name, value in amounts.items() if value}


def _taints(node: Obj) -> list[tuple[str, str, str]]:
    return sorted(
        (str(t.get("key") or ""), str(t.get("value") or ""), str(t.get("effect") or ""))
        for t in (node.get("spec") or {}).get("taints") or ()
    )


def node_view_differences(
    cache: Mapping[str, Any], nodes: Iterable[Obj], pods: Iterable[Obj]
) -> list[str]:
    """Where a scheduler's view of ``nodes`` (``cache``: node name -> labels,
    taints, allocatable, requested, pods) differs from what the API's objects
    say; ``pods`` must be every pod in the cluster (any namespace), as the
    scheduler counts them all."""
    pods = list(pods)
    usage = node_usage(pods)
    on_node: dict[str, list[str]] = {}
    for pod in pods:
        node_name = (pod.get("spec") or {}).get("nodeName")
        if node_name and not _terminal(pod):
            meta = pod.get("metadata") or {}
            on_node.setdefault(node_name, []).append(f"{meta.get('namespace')}/{meta.get('name')}")
    found = []
    for node in nodes:
        name = str(node["metadata"]["name"])
        view = cache.get(name)
        if view is None:
            found.append(f"{name}: not in the scheduler's cache")
            continue
        expected = {
            "labels": dict((node.get("metadata") or {}).get("labels") or {}),
            "taints": _taints(node),
            "allocatable": _nonzero(allocatable(node)),
            "requested": _nonzero(usage.get(name, {})),
            "pods": sorted(on_node.get(name, ())),
        }
        actual = {
            "labels": dict(view.get("labels") or {}),
            "taints": sorted(
                (str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", "")))
                for t in view.get("taints") or ()
            ),
            "allocatable": _nonzero(view.get("allocatable") or {}),
            "requested": _nonzero(view.get("requested") or {}),
            "pods": sorted(view.get("pods") or ()),
        }
        found += [
            f"{name}: {part} {actual[part]!r} in the cache, {expected[part]!r} in the API"
            for part in expected
            if actual[part] != expected[part]
        ]
    return found


def imports_scheduler(source: Path = Path(__file__)) -> bool:
    """Whether the module at ``source`` imports anything from ``scheduler``
    (then it is not an independent oracle)."""
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        if any(name == "scheduler" or name.startswith("scheduler.") for name in names):
            return True
    return False
