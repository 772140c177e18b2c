"""DRAListTypeAttributes in both positions (issue 23 #9).

Cases follow ``k8s.io/dynamic-resource-allocation`` v0.36.2: the CEL side
``cel/compile.go`` (``getAttributeValue``, ``includesFunc``), the constraint
side ``structured/internal/experimental`` (``attributeAsSet``,
``matchAttributeConstraint``, ``distinctAttributeConstraint``) against
``incubating``; allocator ids are upstream's ``allocatortesting`` case
names. kube-scheduler 1.36 passes the gate to CEL only (its
``AllocatorFeatures`` has no ``ListTypeAttributes``), so the plugin's
allocator keeps scalar constraints with the gate on; the experimental
allocator's set semantics are tested with ``list_type_constraints`` set
directly, as upstream's allocator tests set ``ListTypeAttributes``.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from plugins.dynamicresources.allocator import AllocatedState, AllocationError, Allocator
from plugins.dynamicresources.cel import CelEnvironment, SelectorError
from plugins.dynamicresources.constraints import DistinctAttribute, MatchAttribute
from plugins.dynamicresources.features import Features
from plugins.dynamicresources.model import Device, parse_claim, parse_class, parse_slice
from scheduler.app.gateflags import parse_feature_gates
from tests.support.drabuilders import Obj, make_claim, make_class, make_device, make_slice
from tests.unit.plugins.dynamicresources.fakes import steady_cel

NODE = ("node-1", {"region": "region-1"})
LISTS_ON = Features(list_type_attributes=True)
LISTS_OFF = Features()
SETS = Features(list_type_attributes=True, list_type_constraints=True)  # experimental
EXPERIMENTAL = Features(
    consumable_capacity=False,
    binding_conditions=False,
    list_type_attributes=True,
    list_type_constraints=True,
)
CEL_ON = steady_cel(list_type_attributes=True)
CEL_OFF = steady_cel()


def test_the_gate_is_off_by_default_and_settable_both_ways() -> None:
    assert Features.from_gates(parse_feature_gates("")).list_type_attributes is False
    on = Features.from_gates(parse_feature_gates("DRAListTypeAttributes=true"))
    assert on == LISTS_ON
    off = Features.from_gates(parse_feature_gates("DRAListTypeAttributes=false"))
    assert off == LISTS_OFF


@pytest.mark.parametrize(
    ("features", "stable"),
    [
        pytest.param(
            Features(consumable_capacity=False, binding_conditions=False),
            True,
            id="stable allocator without capacity, binding conditions and lists",
        ),
        pytest.param(
            EXPERIMENTAL,
            False,
            id="NewAllocator: list-type constraints need the experimental allocator",
        ),
        pytest.param(
            Features(
                consumable_capacity=False, binding_conditions=False, list_type_attributes=True
            ),
            True,
            id="AllocatorFeatures: the gate alone keeps the stable allocator",
        ),
    ],
)
def test_list_type_attributes_leave_the_stable_allocator(features: Features, stable: bool) -> None:
    assert features.stable_allocator is stable


# ----------------------------------------------------------------------- CEL
def _device(**attributes: Any) -> Any:
    device = make_device("device-1")
    for name, value in attributes.items():
        device.attr(name, value, "version" if name.startswith("version") else "")
    return parse_slice(make_slice("slice-1").node("node-1").device(device).obj()).devices[0].cel


D = 'device.attributes["driver-a"]'
UNSUPPORTED = "CEL runtime error: attribute {}: unsupported attribute value"


@pytest.mark.parametrize(
    ("env", "expression", "attributes", "expected"),
    [
        pytest.param(CEL_ON, f"{D}.numa.includes(1)", {"numa": [0, 1]}, True, id="includes: list"),
        pytest.param(CEL_ON, f"{D}.numa.includes(5)", {"numa": [0, 1]}, False, id="not in list"),
        pytest.param(CEL_ON, f'{D}.model.includes("a")', {"model": "a"}, True, id="scalar"),
        pytest.param(
            CEL_ON, f"{D}.numa.includes(1.0)", {"numa": [1]}, True, id="numbers equal across types"
        ),
        pytest.param(CEL_ON, f"{D}.numa.includes(true)", {"numa": [1]}, False, id="a bool is no 1"),
        pytest.param(
            CEL_ON,
            f'{D}.versions.includes(semver("2.0.0"))',
            {"versions": ["1.0.0", "2.0.0"]},
            True,
            id="versions are Semver values",
        ),
        pytest.param(
            CEL_ON,
            f'{D}.versions.exists(v, v.isGreaterThan(semver("1.5.0")))',
            {"versions": ["1.0.0", "2.0.0"]},
            True,
            id="lists iterate (attributes are dyn)",
        ),
        pytest.param(
            CEL_ON, f"size({D}.numa) == 2 && 1 in {D}.numa", {"numa": [0, 1]}, True, id="size, in"
        ),
        pytest.param(
            CEL_ON,
            f"{D}.numa.includes(3)",
            {"numa": list(range(60))},
            True,
            id="includesFunc: found before the 48th value",
        ),
        pytest.param(
            CEL_ON,
            f"{D}.numa.includes(50)",
            {"numa": list(range(60))},
            "CEL runtime error: 'includes' function cannot be applied to lists longer than "
            "48 values",
            id="includesFunc: longer lists are an error",
        ),
        pytest.param(
            CEL_OFF,
            'device.driver == "driver-a"',
            {"numa": [0, 1]},
            UNSUPPORTED.format("numa"),
            id="getAttributeValue: gate off, a list attribute fails every selector",
        ),
        pytest.param(
            CEL_OFF,
            f'{D}.model.includes("a")',
            {"model": "a"},
            True,
            id="gate off: includes still declared (stored expressions ignore gates)",
        ),
        pytest.param(
            CEL_OFF, f'{D}.model == "a"', {"model": "a"}, True, id="gate off: scalars as before"
        ),
    ],
)
def test_cel_list_attributes(
    env: CelEnvironment, expression: str, attributes: dict[str, Any], expected: bool | str
) -> None:
    device = _device(**attributes)
    if isinstance(expected, bool):
        assert env.compile(expression).matches(device) is expected
        return
    with pytest.raises(SelectorError) as error:
        env.compile(expression).matches(device)
    assert str(error.value).startswith(expected)


def test_one_device_answers_each_environment_from_its_own_results() -> None:
    device = _device(numa=[0, 1])
    on, off = CEL_ON.compile("1 in " + f"{D}.numa"), CEL_OFF.compile("1 in " + f"{D}.numa")
    assert on.matches(device) is True
    with pytest.raises(SelectorError, match="unsupported attribute value"):
        off.matches(device)
    assert on.matches(device) is True


# ---------------------------------------------------------------- constraints
def _devices(*values: Any) -> list[Device]:
    built = make_slice("slice-1").node("node-1")
    for index, value in enumerate(values):
        device = make_device(f"device-{index}")
        if isinstance(value, dict):
            device._obj["attributes"] = {"attr": value}  # a raw (malformed) attribute
        else:
            device.attr("attr", value)
        built.device(device)
    return list(parse_slice(built.obj()).devices)


@pytest.mark.parametrize(
    ("sets", "values", "expected"),
    [
        pytest.param(True, ["a", ["a", "b"]], [True, True], id="a scalar is a one-element set"),
        pytest.param(True, [["a", "b"], ["c"]], [True, False], id="no common element"),
        pytest.param(
            True,
            [["v1", "v2"], ["v2", "v3"], ["v3", "v1"]],
            [True, True, False],
            id="the running intersection must stay non-empty",
        ),
        pytest.param(True, [[1], ["1"]], [True, False], id="types differ"),
        pytest.param(True, [{"strings": []}], [False], id="an empty list is no set"),
        pytest.param(True, [{}], [False], id="no value is no set"),
        pytest.param(False, [["a"], ["a"]], [True, False], id="gate off: a list has no value"),
        pytest.param(False, ["a", ["a"]], [True, False], id="gate off: a list matches no scalar"),
        pytest.param(False, ["a", "a"], [True, True], id="gate off: scalars as before"),
    ],
)
def test_match_attribute(sets: bool, values: list[Any], expected: list[bool]) -> None:
    constraint = MatchAttribute(frozenset(), "driver-a/attr", sets=sets)
    assert [constraint.add("req-0", "", d) for d in _devices(*values)] == expected


def test_match_attribute_keeps_the_narrowed_intersection_after_remove() -> None:
    first, second, third = _devices(["a", "b"], ["b"], ["a"])
    constraint = MatchAttribute(frozenset(), "driver-a/attr", sets=True)
    assert constraint.add("req-0", "", first)
    assert constraint.add("req-0", "", second)
    constraint.remove("req-0", "")
    # upstream's remove only counts down: {a, b} & {b} stays the reference
    assert constraint.add("req-0", "", third) is False
    constraint.remove("req-0", "")
    assert constraint.add("req-0", "", third) is True  # first device again


@pytest.mark.parametrize(
    ("sets", "values", "expected"),
    [
        pytest.param(True, [["a", "b"], ["c"]], [True, True], id="disjoint"),
        pytest.param(True, [["a", "b"], "b"], [True, False], id="overlapping"),
        pytest.param(True, [[1, 2], ["1"]], [True, True], id="types differ: disjoint"),
        pytest.param(True, [{}, "a"], [True, True], id="a held value that is no set is skipped"),
        pytest.param(True, ["a", {}], [True, False], id="a new value that is no set is refused"),
        pytest.param(False, [["a"], "a"], [True, True], id="gate off: a held list is distinct"),
        pytest.param(False, ["a", ["b"]], [True, False], id="gate off: a new list is refused"),
        pytest.param(False, ["a", "a"], [True, False], id="gate off: scalars as before"),
    ],
)
def test_distinct_attribute(sets: bool, values: list[Any], expected: list[bool]) -> None:
    constraint = DistinctAttribute(frozenset(), "driver-a/attr", sets=sets)
    devices = _devices(*values)
    assert [constraint.add(f"req-{i}", "", d) for i, d in enumerate(devices)] == expected


# ------------------------------------------------------------------ allocator
CLASSES = {"class-a": parse_class(make_class("class-a").obj())}
DRIVER_CLASSES = {"class-a": parse_class(make_class("class-a").driver("driver-a").obj())}


def _allocate(
    features: Features, claim: Obj, values: list[Any], classes: Any = None
) -> list[str] | None:
    counter = itertools.count()
    allocator = Allocator(
        AllocatedState(),
        classes or CLASSES,
        [parse_slice(_slice(values))],
        steady_cel(list_type_attributes=features.list_type_attributes),
        new_share_id=lambda: f"share-{next(counter)}",
        features=features,
    )
    results = allocator.allocate(*NODE, [parse_claim(claim)])
    if results is None:
        return None
    return [r["device"] for r in results[0]["devices"]["results"]]


def _slice(values: list[Any]) -> Obj:
    built = make_slice("slice-1").node("node-1")
    for index, value in enumerate(values, start=1):
        device = make_device(f"device-{index}")
        if isinstance(value, dict):
            device._obj["attributes"] = {"attr": value}  # a raw (malformed) attribute
        else:
            device.attr("attr", value)
        built.device(device)
    return built.obj()


def _claim(count: int, kind: str = "match") -> Obj:
    claim = make_claim("claim-0").request("req-0", "class-a", count=count)
    return (claim.match if kind == "match" else claim.distinct)("driver-a/attr").obj()


@pytest.mark.parametrize(
    ("features", "claim", "values", "expected"),
    [
        pytest.param(
            SETS,
            _claim(2),
            [["value1", "value2", "value3"], ["value2", "value3", "value4"]],
            ["device-1", "device-2"],
            id="list-attributes-match-constaint-list-of-string-values-with-common-elements",
        ),
        pytest.param(
            SETS,
            _claim(3),
            [["value1", "value2"], ["value2", "value3"], ["value3", "value1"]],
            None,
            id="list-attributes-match-constaint-list-of-string-values-with-partially-common-elements",
        ),
        pytest.param(
            SETS,
            _claim(2),
            ["value1", ["value1", "value2"]],
            ["device-1", "device-2"],
            id="list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-with-common-elements",
        ),
        pytest.param(
            SETS,
            _claim(2),
            [[0, 1, 2], [1, 2, 3]],
            ["device-1", "device-2"],
            id="list-attributes-match-constaint-list-of-int-values-with-common-elements",
        ),
        pytest.param(
            LISTS_OFF,
            _claim(2),
            [["value1", "value2"], ["value1", "value2"]],
            None,
            id="gate off: match on lists takes one device only",
        ),
        pytest.param(
            LISTS_ON,
            _claim(2),
            [["value1", "value2"], ["value1", "value2"]],
            None,
            id="kube-scheduler 1.36, gate on: match on lists still takes one device only",
        ),
        pytest.param(
            LISTS_ON,
            _claim(1),
            [["value1", "value2"]],
            ["device-1"],
            id="kube-scheduler 1.36, gate on: a list attribute may be the first device",
        ),
        pytest.param(
            LISTS_ON,
            _claim(2, "distinct"),
            [["value1"], ["value2"]],
            None,
            id="kube-scheduler 1.36, gate on: distinct on lists takes one device only",
        ),
        pytest.param(
            SETS,
            _claim(2, "distinct"),
            [["value1", "value2"], ["value2", "value3"], ["value3", "value4"]],
            ["device-1", "device-3"],
            id="list-attributes-distinct-constraint-list-of-string-values-all-distinct",
        ),
        pytest.param(
            SETS,
            _claim(2, "distinct"),
            [["value1", "value2", "value3"], ["value2", "value4", "value5"]],
            None,
            id="list-attributes-distinct-constraint-list-of-string-values-with-common-elements",
        ),
        pytest.param(
            EXPERIMENTAL,
            _claim(2, "distinct"),
            [["value1"], ["value2"]],
            ["device-1", "device-2"],
            id="experimental allocator: distinctAttribute without consumable capacity",
        ),
    ],
)
def test_allocator_with_list_attributes(
    features: Features, claim: Obj, values: list[Any], expected: list[str] | None
) -> None:
    assert _allocate(features, claim, values) == expected


@pytest.mark.parametrize(
    ("features", "values"),
    [
        pytest.param(
            LISTS_OFF,
            [["value1", "value2", "value3"], ["value2", "value3", "value4"]],
            id="list-attributes-disabled-match-constraint-with-lists",
        ),
        pytest.param(
            LISTS_ON, [{}], id="list-attributes-match-constaint-with-empty-or-unknown-type"
        ),
    ],
)
def test_a_class_selector_on_a_device_without_a_usable_value_fails(
    features: Features, values: list[Any]
) -> None:
    counter = itertools.count()
    allocator = Allocator(
        AllocatedState(),
        DRIVER_CLASSES,
        [parse_slice(_slice(values))],
        steady_cel(list_type_attributes=features.list_type_attributes),
        new_share_id=lambda: f"share-{next(counter)}",
        features=features,
    )
    with pytest.raises(AllocationError, match="unsupported attribute value"):
        allocator.allocate(*NODE, [parse_claim(_claim(2))])


def test_iterating_a_list_attribute_keeps_the_missing_domain_rewrite(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # the rewrite's default for a missing domain is dyn({}): a bare {} made
    # cel-cpp refuse a comprehension over one of its values
    selector = CEL_ON.compile(f"{D}.numa.exists(n, n > 0)")
    assert selector.matches(_device(numa=[0, 1])) is True
    assert "rewrite" not in caplog.text
