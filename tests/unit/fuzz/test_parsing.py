"""Fuzzing the parsers: any quantity string, and pods and nodes with one field
malformed or extreme, parse without raising; a rejection is a message that
names the field (``parse_error``), never an exception that would drop the
object in the informer."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scheduler.framework import parse_node, parse_pod
from scheduler.framework.quantity import QuantityError, to_milli, to_units
from tests.unit.fuzz.strategies import (
    Mutation,
    base_pod,
    examples,
    node_mutations,
    pod_mutations,
    quantities,
)

FUZZ = settings(
    max_examples=examples(100),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@FUZZ
@given(quantities)
@example("1e999999999")  # decimal Overflow once escaped as a crash
@example("-1")
def test_a_quantity_is_a_number_or_a_quantity_error_naming_it(text: Any) -> None:
    for convert in (to_milli, to_units):
        rejected = ""
        try:
            value = convert(text)
        except QuantityError as error:
            rejected = str(error)
        if rejected:
            assert repr(str(text)) in rejected or repr(text) in rejected, rejected
        else:
            assert isinstance(value, int)


# Words a message uses for each mutated field: the rejection must name it.
_FIELD_WORDS = {
    "requests": ("requests", "container"),
    "limits": ("limits", "container"),
    "resources": ("resources", "container", "requests"),
    "containers": ("container",),
    "initContainers": ("container", "init"),
    "overhead": ("overhead",),
    "priority": ("priority",),
    "tolerations": ("toleration",),
    "ports": ("port",),
    "nodeSelector": ("nodeSelector",),
    "schedulingGates": ("schedulingGates", "gate"),
    "affinity": ("affinity",),
    "labels": ("labels",),
    "generation": ("generation",),
    "deletionTimestamp": ("deletionTimestamp",),
    "status": ("status",),
    "allocatable": ("allocatable",),
    "taints": ("taint",),
    "unschedulable": ("unschedulable",),
}


def _names_field(path: str, message: str) -> bool:
    steps = [step for step in path.split(".") if not step.isdigit()]
    words = {word for step in steps for word in _FIELD_WORDS.get(step, (step,))}
    return any(word.lower() in message.lower() for word in words)


@FUZZ
@given(pod_mutations())
@example(("spec.containers", {**base_pod(), "spec": {"containers": [None]}}))
@example(("spec.overhead", {**base_pod(), "spec": {"containers": [], "overhead": {"": ""}}}))
def test_a_malformed_pod_parses_with_an_error_naming_the_field(mutation: Mutation) -> None:
    path, raw = mutation
    pod = parse_pod(raw)
    assert pod.key == "default/fuzzed"
    if pod.parse_error:
        assert _names_field(path, pod.parse_error), (path, pod.parse_error)


@FUZZ
@given(node_mutations())
def test_a_malformed_node_parses_with_an_error_naming_the_field(mutation: Mutation) -> None:
    path, raw = mutation
    node = parse_node(raw)
    assert node.name == "fuzzed-node"
    if node.parse_error:
        assert _names_field(path, node.parse_error), (path, node.parse_error)


@FUZZ
@given(st.lists(pod_mutations(), min_size=1, max_size=3))
def test_pod_requests_are_never_negative_or_a_crash(mutations: list[Mutation]) -> None:
    for _, raw in mutations:
        pod = parse_pod(raw)
        if not pod.parse_error:
            assert pod.requests.milli_cpu >= 0, pod.requests
            assert pod.requests.memory >= 0, pod.requests
