"""Cross-type numeric comparisons in DRA selectors (cel-go's
``CrossTypeNumericComparisons``, in Kubernetes' base CEL environment since
1.28): the cases follow cel-spec's ``comparisons`` conformance tests
(``lt_mixed_types``...) and the Kubernetes CEL docs."""

from __future__ import annotations

import pytest

from plugins.dynamicresources import celnumeric
from plugins.dynamicresources.cel import CelDevice, SelectorError
from tests.unit.plugins.dynamicresources.fakes import steady_cel

ENV = steady_cel()
DEVICE = CelDevice("d", {"cores": {"int": 2}, "ratio": {"string": "x"}}, {})
CORES = 'device.attributes["d"].cores'


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        pytest.param("1 < 1.5", True, id="int < double"),
        pytest.param("2 > 1.5", True, id="int > double"),
        pytest.param("1 <= 1.0", True, id="int <= equal double"),
        pytest.param("1.0 > 2", False, id="double > int"),
        pytest.param("2.5 > 2u", True, id="double > uint"),
        pytest.param("1u < 2", True, id="uint < int"),
        pytest.param("2u >= 2.0", True, id="uint >= double"),
        pytest.param("-1 < 0u", True, id="negative int below every uint"),
        pytest.param(
            "18446744073709551615u > 9223372036854775807", True, id="uint beyond int64 range"
        ),
        pytest.param(f"{CORES} + 1 > 2.5", True, id="int arithmetic on an attribute vs double"),
        pytest.param("[1, 2].exists(v, v > 1.5)", True, id="typed comprehension variable"),
        pytest.param(f"{CORES} > 1.5", True, id="dyn attribute vs double (runtime, as before)"),
        pytest.param('"a" < "b"', True, id="strings still ordered"),
        pytest.param('b"a" < b"b"', True, id="bytes still ordered"),
        pytest.param("true > false", True, id="bools still ordered"),
        pytest.param(
            'timestamp("2020-01-01T00:00:00Z") < timestamp("2021-01-01T00:00:00Z")',
            True,
            id="timestamps still ordered",
        ),
        pytest.param('duration("1s") <= duration("2s")', True, id="durations still ordered"),
    ],
)
def test_ordering_across_numeric_types(expression: str, expected: bool) -> None:
    assert ENV.compile(expression).matches(DEVICE) is expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        pytest.param(
            "1 == 1.0",
            "found no matching overload for '_==_' applied to '(int, double)'",
            id="equality is not cross-typed (cel-go neither)",
        ),
        pytest.param(
            '1 < "a"',
            "found no matching overload for '_<_' applied to '(int, string)'",
            id="a number and a string",
        ),
        pytest.param(
            'quantity("1") < quantity("2")',
            "found no matching overload for '_<_'",
            id="Quantity has no ordering operators",
        ),
    ],
)
def test_what_still_does_not_compile(expression: str, message: str) -> None:
    with pytest.raises(SelectorError, match="CEL compile error") as error:
        ENV.compile(expression)
    assert message in str(error.value)


def test_every_operator_has_the_standard_and_the_six_cross_numeric_overloads() -> None:
    ids = {(op, oid) for op, oid, _ in celnumeric.overloads()}
    assert len(ids) == 4 * (8 + 6)
    assert ("_<_", "less_int64_double") in ids
    assert ("_>=_", "greater_equals_uint64_int64") in ids
    assert ("_<=_", "less_equals_timestamp") in ids
