"""Hypothesis strategies for malformed and extreme API objects.

``quantities`` mixes well-formed, extreme (huge exponents, 25-digit numbers,
negative) and malformed quantity strings; ``garbage`` is any JSON value of the
wrong type. ``pod_mutations`` / ``node_mutations`` pick one field of a valid
object and put such a value there, returning the field's path and the object,
so a test can check that a rejection names that field.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from tests.support.builders import make_node, make_pod

Raw = dict[str, Any]

# Examples per fuzz test: few in the default run, more under ``make chaos``.
# The variable gives the examples of a test whose default is ``BASE`` and
# scales every test alike (``make chaos`` sets 2000: 20x each default).
EXAMPLES_ENV = "PYSCHEDULER_FUZZ_EXAMPLES"
BASE = 100


def examples(default: int) -> int:
    wanted = os.environ.get(EXAMPLES_ENV)
    if not wanted:
        return default
    return max(1, default * int(wanted) // BASE)


garbage: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.lists(st.one_of(st.integers(), st.text(max_size=3)), max_size=2),
    st.dictionaries(st.text(max_size=4), st.one_of(st.integers(), st.text(max_size=3)), max_size=2),
)

quantities: st.SearchStrategy[Any] = st.one_of(
    st.from_regex(
        r"\A[+-]?\d{1,25}(\.\d{0,6})?(m|k|M|G|Ki|Mi|Gi|Ti|Ei|e[+-]?\d{1,9}|E\d{1,3})?\Z",
        fullmatch=True,
    ),
    st.sampled_from(["", " ", "1.2.3", "1Zi", "--1", "1e", "NaN", "Infinity", "0x10", "1_000"]),
    st.text(max_size=10),
    garbage,
)

Mutation = tuple[str, Raw]


def _set(obj: Raw, path: tuple[str | int, ...], value: Any) -> Raw:
    changed = copy.deepcopy(obj)
    target: Any = changed
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return changed


def _path_text(path: tuple[str | int, ...]) -> str:
    return ".".join(str(step) for step in path)


def _mutations(
    base: Raw, fields: list[tuple[tuple[str | int, ...], st.SearchStrategy[Any]]]
) -> st.SearchStrategy[Mutation]:
    def build(choice: tuple[tuple[str | int, ...], Any]) -> Mutation:
        path, value = choice
        return _path_text(path), _set(base, path, value)

    per_field = [values.map(lambda v, p=path: (p, v)) for path, values in fields]
    return st.one_of(per_field).map(build)


_expression = st.fixed_dictionaries(
    {
        "key": st.one_of(st.sampled_from(["zone", "app"]), garbage),
        "operator": st.one_of(
            st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bogus"]), garbage
        ),
        "values": st.one_of(st.lists(st.one_of(st.text(max_size=3), garbage), max_size=2), garbage),
    }
)
_selector = st.one_of(
    garbage,
    st.fixed_dictionaries(
        {},
        optional={
            "matchLabels": st.one_of(garbage, st.dictionaries(st.text(max_size=3), garbage)),
            "matchExpressions": st.one_of(garbage, st.lists(_expression, max_size=2)),
        },
    ),
)
_pod_term = st.fixed_dictionaries(
    {"labelSelector": _selector, "topologyKey": st.one_of(st.just("zone"), garbage)},
    optional={"namespaces": garbage, "namespaceSelector": _selector},
)
_node_term = st.fixed_dictionaries(
    {},
    optional={
        "matchExpressions": st.one_of(garbage, st.lists(_expression, max_size=2)),
        "matchFields": st.one_of(garbage, st.lists(_expression, max_size=1)),
    },
)
affinities: st.SearchStrategy[Any] = st.fixed_dictionaries(
    {},
    optional={
        "nodeAffinity": st.one_of(
            garbage,
            st.fixed_dictionaries(
                {},
                optional={
                    "requiredDuringSchedulingIgnoredDuringExecution": st.one_of(
                        garbage,
                        st.fixed_dictionaries(
                            {
                                "nodeSelectorTerms": st.one_of(
                                    garbage, st.lists(_node_term, max_size=2)
                                )
                            }
                        ),
                    ),
                    "preferredDuringSchedulingIgnoredDuringExecution": st.one_of(
                        garbage,
                        st.lists(
                            st.fixed_dictionaries({"weight": garbage, "preference": _node_term}),
                            max_size=2,
                        ),
                    ),
                },
            ),
        ),
        "podAffinity": st.one_of(
            garbage,
            st.fixed_dictionaries(
                {
                    "requiredDuringSchedulingIgnoredDuringExecution": st.one_of(
                        garbage, st.lists(_pod_term, max_size=2)
                    )
                }
            ),
        ),
        "podAntiAffinity": st.one_of(
            garbage,
            st.fixed_dictionaries(
                {
                    "preferredDuringSchedulingIgnoredDuringExecution": st.one_of(
                        garbage,
                        st.lists(
                            st.fixed_dictionaries(
                                {"weight": garbage, "podAffinityTerm": _pod_term}
                            ),
                            max_size=2,
                        ),
                    )
                }
            ),
        ),
    },
)


def base_pod(name: str = "fuzzed", scheduler: str = "fuzz") -> Raw:
    pod = make_pod(name, "default").uid(f"uid-{name}").scheduler(scheduler)
    raw = pod.requests(cpu="100m", memory="64Mi").obj()
    raw["metadata"]["resourceVersion"] = "1"
    return raw


_REQUESTS = ("spec", "containers", 0, "resources", "requests")


def pod_mutations(scheduler: str = "fuzz") -> st.SearchStrategy[Mutation]:
    base = base_pod(scheduler=scheduler)
    init = {"name": "init", "image": "i", "resources": {"requests": {"cpu": "1"}}}
    tolerations = st.lists(
        st.fixed_dictionaries(
            {"key": garbage, "operator": garbage, "value": garbage, "effect": garbage}
        ),
        max_size=2,
    )
    ports = st.lists(
        st.fixed_dictionaries(
            {"containerPort": garbage, "hostPort": garbage, "protocol": garbage, "hostIP": garbage}
        ),
        max_size=2,
    )
    fields: list[tuple[tuple[str | int, ...], st.SearchStrategy[Any]]] = [
        ((*_REQUESTS, "cpu"), quantities),
        ((*_REQUESTS, "memory"), quantities),
        ((*_REQUESTS, "example.com/widget"), quantities),
        ((*_REQUESTS, "ephemeral-storage"), quantities),
        (("spec", "containers", 0, "resources"), garbage),
        (
            ("spec", "containers", 0, "resources", "limits"),
            st.dictionaries(st.just("cpu"), quantities),
        ),
        (("spec", "containers"), st.one_of(garbage, st.lists(garbage, max_size=2))),
        (
            ("spec", "initContainers"),
            st.one_of(
                garbage,
                st.lists(
                    st.fixed_dictionaries(
                        {
                            "name": st.just("init"),
                            "restartPolicy": st.one_of(st.just("Always"), garbage),
                            "resources": st.fixed_dictionaries(
                                {"requests": st.dictionaries(st.just("cpu"), quantities)}
                            ),
                        }
                    ),
                    max_size=2,
                ),
                st.just([init]),
            ),
        ),
        (("spec", "overhead"), st.one_of(garbage, st.dictionaries(st.just("cpu"), quantities))),
        (
            ("spec", "resources"),
            st.fixed_dictionaries({"requests": st.dictionaries(st.just("cpu"), quantities)}),
        ),
        (("spec", "priority"), garbage),
        (("spec", "tolerations"), st.one_of(garbage, tolerations)),
        (("spec", "containers", 0, "ports"), st.one_of(garbage, ports)),
        (
            ("spec", "nodeSelector"),
            st.one_of(garbage, st.dictionaries(st.text(max_size=3), garbage, max_size=2)),
        ),
        (("spec", "schedulingGates"), st.one_of(garbage, st.lists(garbage, max_size=2))),
        (("spec", "affinity"), st.one_of(garbage, affinities)),
        (
            ("spec", "volumes"),
            st.one_of(
                garbage,
                st.lists(
                    st.fixed_dictionaries({"name": st.just("v"), "image": garbage}), max_size=2
                ),
            ),
        ),
        (("spec", "containers", 0, "image"), garbage),
        (
            ("spec", "topologySpreadConstraints"),
            st.one_of(
                garbage,
                st.lists(
                    st.fixed_dictionaries(
                        {
                            "maxSkew": garbage,
                            "topologyKey": garbage,
                            "whenUnsatisfiable": garbage,
                            "labelSelector": _selector,
                        }
                    ),
                    max_size=2,
                ),
            ),
        ),
        (("metadata", "labels"), garbage),
        (("metadata", "generation"), garbage),
        (("metadata", "deletionTimestamp"), garbage),
        (("status",), garbage),
    ]
    return _mutations(base, fields)


def base_node(name: str = "fuzzed-node") -> Raw:
    raw = make_node(name).allocatable(cpu="4", memory="8Gi", pods="110").obj()
    raw["metadata"]["resourceVersion"] = "1"
    return raw


def node_mutations(name: str = "fuzzed-node") -> st.SearchStrategy[Mutation]:
    base = base_node(name)
    taints = st.lists(
        st.fixed_dictionaries({"key": garbage, "value": garbage, "effect": garbage}), max_size=2
    )
    fields: list[tuple[tuple[str | int, ...], st.SearchStrategy[Any]]] = [
        (("status", "allocatable", "cpu"), quantities),
        (("status", "allocatable", "memory"), quantities),
        (("status", "allocatable", "pods"), quantities),
        (("status", "allocatable", "example.com/widget"), quantities),
        (("status", "allocatable"), garbage),
        (("status",), garbage),
        (("spec", "taints"), st.one_of(garbage, taints)),
        (("spec", "unschedulable"), garbage),
        (
            ("metadata", "labels"),
            st.one_of(garbage, st.dictionaries(st.text(max_size=3), garbage, max_size=2)),
        ),
    ]
    return _mutations(base, fields)


Check = Callable[[str, Raw], None]
