"""The DRA CEL adapter: environment, libraries, errors, caches and the cost limit."""

from __future__ import annotations

from typing import Any

import pytest

from plugins.dynamicresources.cel import (
    COST_LIMIT_EXCEEDED,
    MAX_EXPRESSION_LENGTH,
    CelDevice,
    CelEnvironment,
    SelectorError,
)
from tests.unit.plugins.dynamicresources.fakes import steady_cel

DRIVER = "gpu.example.com"


def gpu(**extra_attributes: Any) -> CelDevice:
    attributes: dict[str, Any] = {
        "model": {"string": "A100"},
        "numa": {"int": 1},
        "healthy": {"bool": True},
        "driverVersion": {"version": "1.2.3"},
        "dra.k8s.io/pcieRoot": {"string": "pci-0"},
    }
    attributes.update(extra_attributes)
    return CelDevice(
        DRIVER, attributes, {"memory": {"value": "40Gi"}, "dra.k8s.io/slots": {"value": "2"}}
    )


ENV = steady_cel()


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        pytest.param('device.driver == "gpu.example.com"', True, id="driver"),
        pytest.param('device.driver == "other"', False, id="driver mismatch"),
        pytest.param('device.attributes["gpu.example.com"].model == "A100"', True, id="string"),
        pytest.param('device.attributes["gpu.example.com"].numa == 1', True, id="int"),
        pytest.param('device.attributes["gpu.example.com"].healthy', True, id="bool"),
        pytest.param(
            'device.attributes["dra.k8s.io"].pcieRoot == "pci-0"', True, id="qualified domain"
        ),
        pytest.param(
            'device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.2.0"))',
            True,
            id="version is a Semver",
        ),
        pytest.param(
            'device.attributes["gpu.example.com"].driverVersion == semver("v1.2.3", true)',
            True,
            id="semver normalize and equality",
        ),
        pytest.param(
            'device.attributes["gpu.example.com"].driverVersion.major() == 1 && '
            'device.attributes["gpu.example.com"].driverVersion.minor() == 2 && '
            'device.attributes["gpu.example.com"].driverVersion.patch() == 3',
            True,
            id="semver parts",
        ),
        pytest.param('semver("1.0.0-alpha").isLessThan(semver("1.0.0"))', True, id="pre-release"),
        pytest.param('isSemver("1.2") || isSemver("x")', False, id="isSemver strict"),
        pytest.param('isSemver("v1.2", true)', True, id="isSemver normalize"),
        pytest.param(
            'device.capacity["gpu.example.com"].memory.compareTo(quantity("4Gi")) >= 0',
            True,
            id="capacity compareTo",
        ),
        pytest.param(
            'device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("100Gi"))',
            False,
            id="capacity isGreaterThan",
        ),
        pytest.param('device.capacity["dra.k8s.io"].slots.asInteger() == 2', True, id="asInteger"),
        pytest.param('quantity("1Gi") == quantity("1024Mi")', True, id="quantity equality"),
        pytest.param('quantity("1").add(quantity("500m")) == quantity("1.5")', True, id="add"),
        pytest.param('quantity("2").sub(3).sign() == -1', True, id="sub int and sign"),
        pytest.param('quantity("1.5").isInteger()', False, id="isInteger"),
        pytest.param('isQuantity("1Gi") && !isQuantity("1 Gi")', True, id="isQuantity"),
        pytest.param(
            '"model" in device.attributes["other.example.com"]', False, id="missing domain"
        ),
        pytest.param(
            'device.attributes["other.example.com"] == {}',
            True,
            id="missing domain is an empty map",
        ),
        pytest.param(
            'cel.bind(g, device.attributes["gpu.example.com"], g.healthy && g.numa == 1)',
            True,
            id="cel.bind",
        ),
        pytest.param(
            'device.attributes["gpu.example.com"].?nope.orValue("x") == "x"',
            True,
            id="optional syntax",
        ),
        pytest.param(
            'device.attributes["gpu.example.com"].model.lowerAscii() == "a100"',
            True,
            id="strings extension",
        ),
        pytest.param("device.allowMultipleAllocations", False, id="allowMultipleAllocations"),
    ],
)
def test_selector_matches(expression: str, expected: bool) -> None:
    assert ENV.compile(expression).matches(gpu()) is expected


OTHER = "other.example.com"  # a domain the device has no attribute or capacity in


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        pytest.param(
            f'"{OTHER}" in device.attributes && device.attributes["{OTHER}"].model == "x"',
            False,
            id="the in-guard skips a device without the domain",
        ),
        pytest.param(
            f'!("{OTHER}" in device.capacity) || '
            f'device.capacity["{OTHER}"].memory.isGreaterThan(quantity("1"))',
            True,
            id="the negated in-guard on capacity",
        ),
        pytest.param(f'"{OTHER}" in device.attributes', False, id="in sees only real domains"),
        pytest.param(
            f'size(device.attributes) == 2 && device.attributes["{OTHER}"] == {{}}',
            True,
            id="size counts only real domains",
        ),
        pytest.param(
            f'device.attributes.exists(d, d == "{OTHER}")',
            False,
            id="exists iterates only real domains",
        ),
        pytest.param(
            f'device.attributes.all(d, d != "{OTHER}")', True, id="all iterates only real domains"
        ),
        pytest.param(
            'device.attributes[device.driver + ".x"] == {}',
            True,
            id="a computed missing domain is an empty map",
        ),
        pytest.param(
            f'device.attributes[?"{OTHER}"].hasValue()',
            True,
            id="an optional lookup of a missing domain finds an empty map",
        ),
        pytest.param(
            f'device.attributes["{OTHER}"].size() == 0 && device.capacity["{OTHER}"] == {{}}',
            True,
            id="two missing domains, one per map",
        ),
    ],
)
def test_missing_domains_as_upstream(expression: str, expected: bool) -> None:
    """Upstream's outer maps return an empty map when a lookup misses (its
    mapper overrides Find only): ``in``, ``size()`` and iteration still see
    the device's real domains."""
    assert steady_cel().compile(expression).matches(gpu()) is expected


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        pytest.param(
            "1 +", "CEL compile error: compilation failed: ERROR: <input>:1:4", id="syntax"
        ),
        pytest.param("nosuch(1)", "undeclared reference to 'nosuch'", id="unknown function"),
        pytest.param(
            "1 + 1",
            "CEL compile error: must evaluate to bool or the unknown type, not int",
            id="not bool",
        ),
        pytest.param("x" * (MAX_EXPRESSION_LENGTH + 1), "more than the limit", id="too long"),
    ],
)
def test_compile_errors(expression: str, error: str) -> None:
    with pytest.raises(SelectorError, match=r"^CEL compile error") as raised:
        ENV.compile(expression)
    assert error in str(raised.value)
    assert raised.value.kind == "compile"


@pytest.mark.parametrize(
    ("expression", "device", "error"),
    [
        pytest.param(
            'device.attributes["gpu.example.com"].missing',
            gpu(),
            "CEL runtime error: no such key: missing",
            id="missing key in a present domain",
        ),
        pytest.param(
            "device.driver", gpu(), "could not be converted to bool", id="result not bool"
        ),
        pytest.param(
            'quantity("abc").sign() == 1', gpu(), "invalid quantity 'abc'", id="bad quantity"
        ),
        pytest.param(
            "device.driver != ''",
            gpu(weird={"list": [1]}),
            "attribute weird: unsupported attribute value",
            id="unsupported attribute",
        ),
        pytest.param(
            "device.driver != ''",
            gpu(driverVersion={"version": "1.2"}),
            "attribute driverVersion: parse semantic version",
            id="bad version attribute",
        ),
    ],
)
def test_runtime_errors(expression: str, device: CelDevice, error: str) -> None:
    with pytest.raises(SelectorError, match=r"^CEL runtime error") as raised:
        ENV.compile(expression).matches(device)
    assert error in str(raised.value)


def test_compiles_once_per_expression() -> None:
    env = steady_cel()
    first = env.compile("device.driver == 'a'")
    assert env.compile("device.driver == 'a'") is first


def test_results_are_cached_per_device() -> None:
    ticks = iter(range(100))
    env = CelEnvironment(clock=lambda: float(next(ticks)), cost_limit_seconds=10)
    selector = env.compile("device.driver == 'gpu.example.com'")
    device = gpu()
    assert device.results == {}
    assert selector.matches(device)
    assert device.results == {selector.key: True}
    assert selector.matches(device)
    assert next(ticks) == 2  # evaluated (two clock reads) once only


def test_a_slow_evaluation_is_a_cost_error_that_is_not_cached() -> None:
    ticks = iter([0.0, 5.0, 10.0, 10.01])
    env = CelEnvironment(clock=lambda: next(ticks), cost_limit_seconds=0.1)
    selector = env.compile("device.driver == 'gpu.example.com'")
    device = gpu()
    with pytest.raises(SelectorError, match=COST_LIMIT_EXCEEDED):
        selector.matches(device)
    assert device.results == {}  # a GC pause must not fail the device for good
    assert selector.matches(device)  # evaluated again, within the limit this time


_WORDS = "'" + "a" * 70 + "'.split('')"


@pytest.mark.parametrize(
    "expression",
    [
        pytest.param(
            f"{_WORDS}.all(a, {_WORDS}.all(b, {_WORDS}.all(c, {_WORDS}.all(d, true))))",
            id="nested comprehensions",
        ),
        pytest.param(
            f"{_WORDS}.exists(a, {_WORDS}.exists(b,"
            f" {_WORDS}.exists(c, {_WORDS}.exists(d, false))))",
            id="nested exists",
        ),
    ],
)
def test_an_exceeded_iteration_budget_is_upstreams_cost_error_and_cached(
    expression: str,
) -> None:
    env = CelEnvironment(cost_limit_seconds=1e9)
    selector = env.compile(expression)
    device = gpu()
    for _ in range(2):
        with pytest.raises(SelectorError) as caught:
            selector.matches(device)
        assert str(caught.value) == f"CEL runtime error: {COST_LIMIT_EXCEEDED}"
    assert isinstance(device.results[selector.key], SelectorError)  # deterministic: cached
