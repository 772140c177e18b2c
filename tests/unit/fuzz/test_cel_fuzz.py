"""Fuzzing the DRA CEL evaluator with its budget: random selector expressions
over random device attributes and capacities either compile and evaluate to
True/False or raise ``SelectorError`` (compile or runtime), never another
exception; the outcome is deterministic (the same on a fresh device built from
the same input), so caching it is sound, and an exceeded budget is reported
with upstream's message every time.

The wall-time backstop is disabled (a clock that never moves): what is
checked is the deterministic budget, not the machine's speed."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugins.dynamicresources.cel import (
    COST_LIMIT_EXCEEDED,
    CelDevice,
    CelEnvironment,
    SelectorError,
)
from tests.unit.fuzz.strategies import examples

DRIVER = "gpu.example.com"
_NAMES = ("model", "numa", "healthy", "driverVersion", "dra.k8s.io/pcieRoot", "x")

_attribute_value = st.one_of(
    st.builds(lambda v: {"int": v}, st.integers(min_value=-(2**63), max_value=2**63 - 1)),
    st.builds(lambda v: {"bool": v}, st.booleans()),
    st.builds(lambda v: {"string": v}, st.text(max_size=8)),
    st.builds(lambda v: {"version": v}, st.sampled_from(["1.2.3", "0.0.1-rc.1", "1.2", "x"])),
    st.just({}),
)
_quantity = st.sampled_from(["0", "1", "40Gi", "1.5", "100m", "1e3", "-2Ki", "bad", "9" * 40])

_attributes = st.dictionaries(st.sampled_from(_NAMES), _attribute_value, max_size=4)
_capacity = st.dictionaries(
    st.sampled_from(_NAMES), st.builds(lambda v: {"value": v}, _quantity), max_size=3
)

_LEAVES = (
    "device.driver",
    "device.allowMultipleAllocations",
    'device.attributes["gpu.example.com"]',
    'device.attributes["dra.k8s.io"]',
    'device.attributes["unknown.example.com"]',
    'device.attributes["gpu.example.com"].model',
    'device.attributes["gpu.example.com"].numa',
    'device.attributes["gpu.example.com"].driverVersion',
    'device.capacity["gpu.example.com"].memory',
    'device.capacity["gpu.example.com"]',
    'quantity("1Gi")',
    'quantity("1e999999")',
    'semver("1.2.3")',
    '"abc"',
    "1",
    "-9223372036854775808",
    "2.5",
    "true",
    "null",
    "[1, 2, 3]",
    "{}",
    "'" + "a" * 120 + "'.split('')",
)


def _expressions() -> st.SearchStrategy[str]:
    leaf = st.sampled_from(_LEAVES)

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.builds(
                lambda a, op, b: f"({a} {op} {b})",
                inner,
                st.sampled_from(["==", "!=", "<", ">=", "&&", "||", "+", "-", "*", "/", "%", "in"]),
                inner,
            ),
            st.builds(lambda a: f"!({a})", inner),
            st.builds(lambda a: f"size({a})", inner),
            st.builds(
                lambda a, m: f"{a}.{m}",
                inner,
                st.sampled_from(
                    [
                        "isGreaterThan(quantity('1'))",
                        "compareTo(semver('1.0.0'))",
                        "asInteger()",
                        "major()",
                        "startsWith('A')",
                        "orValue(1)",
                    ]
                ),
            ),
            st.builds(lambda a, b: f"{a}.all(e, {b})", inner, inner),
            st.builds(lambda a, b: f"{a}.exists(e, {b})", inner, inner),
            st.builds(lambda a, b: f"{a}.map(e, {b})", inner, inner),
            st.builds(lambda a, b, c: f"({a} ? {b} : {c})", inner, inner, inner),
        )

    return st.recursive(leaf, extend, max_leaves=12)


def _outcome(env: CelEnvironment, expression: str, device: CelDevice) -> tuple[str, Any]:
    try:
        return ("ok", env.compile(expression).matches(device))
    except SelectorError as error:
        return ("error", str(error))


def _device(attributes: dict[str, Any], capacity: dict[str, Any]) -> CelDevice:
    return CelDevice(DRIVER, attributes, capacity)


@settings(
    max_examples=examples(200),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(_expressions(), _attributes, _capacity)
def test_any_selector_on_any_device_is_a_bool_or_a_selector_error_and_deterministic(
    expression: str, attributes: dict[str, Any], capacity: dict[str, Any]
) -> None:
    env = CelEnvironment(clock=lambda: 0.0)
    first = _outcome(env, expression, _device(attributes, capacity))
    fresh = _outcome(CelEnvironment(clock=lambda: 0.0), expression, _device(attributes, capacity))

    assert first == fresh
    if first[0] == "ok":
        assert isinstance(first[1], bool)


_BIG = "'" + "a" * 200 + "'.split('')"


@settings(max_examples=examples(30), deadline=None)
@given(
    st.lists(st.sampled_from(["all", "exists", "exists_one"]), min_size=2, max_size=4),
    st.sampled_from(["", "size({}.filter(f, true)) > 0", "size({}.map(m, 1)) > 0"]),
)
def test_an_exceeded_budget_is_upstreams_error_every_time(macros: list[str], outer: str) -> None:
    expression, value = "true", True
    for level, macro in enumerate(macros):
        # a body that never short-circuits: true under all, false otherwise
        wanted = macro == "all"
        body = expression if value == wanted else f"!({expression})"
        expression, value = f"{_BIG}.{macro}(v{level}, {body})", wanted
    if outer:  # a list-building macro around a boolean inner budget buster
        expression = outer.format(_BIG) + f" && {expression}"
    env = CelEnvironment(clock=lambda: 0.0)
    device = _device({}, {})

    outcomes = [_outcome(env, expression, device), _outcome(env, expression, _device({}, {}))]

    assert outcomes == [("error", f"CEL runtime error: {COST_LIMIT_EXCEEDED}")] * 2
