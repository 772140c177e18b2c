"""Where a raw pod or node is malformed: each problem names the field.

The API server validates what it stores, so these checks only matter when it
did not (an older server, a bug, a future field); then the scheduler must say
what is wrong with which field, instead of crashing in a parser or a plugin
and silently losing the object. ``parse_pod``/``parse_node`` call these only
when their fast path fails, so a well-formed object pays nothing.

The checks cover the fields the scheduler reads: each must be absent, null or
of the type the API defines; quantities must parse and not be negative.
Unknown fields are ignored. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.quantity import QuantityError, parse_quantity


class _Quantity:
    """Schema marker: a non-negative quantity (a string or a number)."""


class _MapOf:
    """Schema marker: an object whose every value matches ``values``."""

    def __init__(self, values: Any) -> None:
        self.values = values


QUANTITY = _Quantity()
RESOURCES = {"requests": _MapOf(QUANTITY), "limits": _MapOf(QUANTITY)}
CONTAINER = {
    "name": str,
    "image": str,
    "restartPolicy": str,
    "resources": RESOURCES,
    "ports": [
        {"hostPort": int, "containerPort": int, "protocol": str, "hostIP": str},
    ],
}
REQUIREMENT = {"key": str, "operator": str, "values": [str]}
LABEL_SELECTOR = {"matchLabels": _MapOf(str), "matchExpressions": [REQUIREMENT]}
NODE_TERM = {"matchExpressions": [REQUIREMENT], "matchFields": [REQUIREMENT]}
POD_TERM = {
    "labelSelector": LABEL_SELECTOR,
    "namespaceSelector": LABEL_SELECTOR,
    "namespaces": [str],
    "topologyKey": str,
    "matchLabelKeys": [str],
    "mismatchLabelKeys": [str],
}
POD_AFFINITY = {
    "requiredDuringSchedulingIgnoredDuringExecution": [POD_TERM],
    "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": int, "podAffinityTerm": POD_TERM},
    ],
}
AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [NODE_TERM]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": int, "preference": NODE_TERM},
        ],
    },
    "podAffinity": POD_AFFINITY,
    "podAntiAffinity": POD_AFFINITY,
}
POD = {
    "metadata": {
        "name": str,
        "namespace": str,
        "uid": str,
        "resourceVersion": str,
        "generation": int,
        "deletionTimestamp": str,
        "labels": _MapOf(str),
    },
    "spec": {
        "nodeName": str,
        "schedulerName": str,
        "priority": int,
        "containers": [CONTAINER],
        "initContainers": [CONTAINER],
        "overhead": _MapOf(QUANTITY),
        "resources": RESOURCES,
        "nodeSelector": _MapOf(str),
        "affinity": AFFINITY,
        "tolerations": [
            {"key": str, "operator": str, "value": str, "effect": str, "tolerationSeconds": int},
        ],
        "schedulingGates": [{"name": str}],
        "volumes": [{"name": str, "image": {"reference": str}}],
        "topologySpreadConstraints": [
            {
                "maxSkew": int,
                "topologyKey": str,
                "whenUnsatisfiable": str,
                "labelSelector": LABEL_SELECTOR,
                "minDomains": int,
                "matchLabelKeys": [str],
            },
        ],
    },
    "status": {"phase": str, "nominatedNodeName": str, "conditions": list},
}
NODE = {
    "metadata": {"name": str, "uid": str, "resourceVersion": str, "labels": _MapOf(str)},
    "spec": {
        "unschedulable": bool,
        "taints": [{"key": str, "value": str, "effect": str}],
    },
    "status": {"allocatable": _MapOf(QUANTITY), "capacity": _MapOf(QUANTITY)},
}

_TYPE_NAMES = {
    str: "a string",
    int: "an integer",
    bool: "a boolean",
    dict: "an object",
    list: "a list",
}


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _check(value: Any, schema: Any, path: str, problems: list[str]) -> None:
    if value is None:
        return
    if isinstance(schema, _Quantity):
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            problems.append(f"{path}: expected a quantity, got {_kind(value)}")
            return
        try:
            if parse_quantity(str(value)) < 0:
                problems.append(f"{path}: {value!r} is negative")
        except QuantityError as error:
            problems.append(f"{path}: {error}")
        except ArithmeticError:
            problems.append(f"{path}: quantity {value!r} is out of range")
        return
    if isinstance(schema, _MapOf):
        if not isinstance(value, Mapping):
            problems.append(f"{path}: expected an object, got {_kind(value)}")
            return
        for key, item in value.items():
            _check(item, schema.values, f"{path}.{key}", problems)
        return
    if isinstance(schema, dict):
        if not isinstance(value, Mapping):
            problems.append(f"{path}: expected an object, got {_kind(value)}")
            return
        for key, sub in schema.items():
            _check(value.get(key), sub, f"{path}.{key}" if path else key, problems)
        return
    if isinstance(schema, list):
        if not isinstance(value, list):
            problems.append(f"{path}: expected a list, got {_kind(value)}")
            return
        for index, item in enumerate(value):
            if item is None:  # an element is never optional
                problems.append(f"{path}[{index}]: expected an element, got null")
            else:
                _check(item, schema[0], f"{path}[{index}]", problems)
        return
    wrong_bool = isinstance(value, bool) and schema is not bool
    if wrong_bool or not isinstance(value, schema):
        problems.append(f"{path}: expected {_TYPE_NAMES[schema]}, got {_kind(value)}")


def pod_problems(raw: Any) -> list[str]:
    """Every malformed field of a raw pod, as ``path: problem``."""
    problems: list[str] = []
    _check(raw, POD, "", problems)
    return problems


def node_problems(raw: Any) -> list[str]:
    """Every malformed field of a raw node, as ``path: problem``."""
    problems: list[str] = []
    _check(raw, NODE, "", problems)
    return problems
