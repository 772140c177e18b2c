"""The CEL libraries of upstream's 1.36 environment (issue 23 #5), checked
against their documented examples: cel-go's ext.Sets, ext.Lists (v3),
ext.TwoVarComprehensions and ext.Strings (v2) (here cel-cpp's own
extensions), and Kubernetes' ``lists`` library (k8s.io/apiserver
pkg/cel/library/lists.go doc comment), on a device's attributes too."""

from __future__ import annotations

import pytest

from plugins.dynamicresources.cel import CelDevice, CelEnvironment, SelectorError

ENV = CelEnvironment()
DEVICE = CelDevice(
    "gpu.example.com",
    {"model": {"string": "A100"}, "numa": {"int": 1}, "cores": {"int": 96}},
    {},
)


@pytest.mark.parametrize(
    "expression",
    [
        # ext.Sets
        pytest.param("sets.contains([1, 2, 3, 4], [2, 3])", id="sets.contains"),
        pytest.param("sets.contains([1, 2.0, 3u], [1.0, 2u, 3])", id="sets.contains numeric"),
        pytest.param("sets.equivalent([1, 2, 3], [3u, 2.0, 1])", id="sets.equivalent"),
        pytest.param("sets.intersects([1], [1, 2])", id="sets.intersects"),
        pytest.param("!sets.intersects([[1], [2, 3]], [[1, 2], [2, 3.0]]) == false", id="nested"),
        # ext.Lists
        pytest.param("[1, 2, 3, 4].slice(1, 3) == [2, 3]", id="lists slice"),
        pytest.param("[1, [2, 3], [4]].flatten() == [1, 2, 3, 4]", id="lists flatten"),
        pytest.param("lists.range(4) == [0, 1, 2, 3]", id="lists.range"),
        pytest.param("[1, 2, 2, 3].distinct() == [1, 2, 3]", id="lists distinct"),
        pytest.param("[5, 3, 1].reverse() == [1, 3, 5]", id="lists reverse"),
        pytest.param("[3, 2, 1].sort() == [1, 2, 3]", id="lists sort"),
        pytest.param('["b", "a", "c"].sortBy(x, x) == ["a", "b", "c"]', id="lists sortBy"),
        pytest.param("[1, 2, 3].first() == optional.of(1)", id="lists first (v3)"),
        # ext.TwoVarComprehensions
        pytest.param("[1, 2, 3].all(i, v, i < v)", id="two-variable all"),
        pytest.param("{'a': 1, 'b': 2}.exists(k, v, k == 'b' && v == 2)", id="two-variable exists"),
        pytest.param("[1, 2].existsOne(i, v, i == 0 && v == 1)", id="two-variable existsOne"),
        pytest.param("[1, 2].transformList(i, v, v * 2) == [2, 4]", id="transformList"),
        # ext.Strings v2
        pytest.param(
            "'%d devices on %s'.format([2, 'node-1']) == '2 devices on node-1'", id="format"
        ),
        pytest.param("'a,b'.split(',') == ['a', 'b'] && 'AB'.lowerAscii() == 'ab'", id="strings"),
        # Kubernetes lists
        pytest.param("[1, 2, 3].isSorted()", id="isSorted"),
        pytest.param("['a', 'b', 'b', 'c'].isSorted()", id="isSorted strings"),
        pytest.param("![2.0, 1.0].isSorted()", id="isSorted false"),
        pytest.param("[1].isSorted() && [].isSorted()", id="isSorted short"),
        pytest.param("[1, 3].sum() == 4", id="sum"),
        pytest.param("[1.0, 3.0].sum() == 4.0", id="sum doubles"),
        pytest.param("[].sum() == 0", id="sum empty"),
        pytest.param("[1, 3].min() == 1 && [1, 3].max() == 3 && [1].min() == 1", id="min max"),
        pytest.param("[1, 2, 2, 3].indexOf(2) == 1", id="indexOf"),
        pytest.param("['a', 'b', 'b', 'c'].lastIndexOf('b') == 2", id="lastIndexOf"),
        pytest.param("[1.0].indexOf(1.1) == -1 && [].indexOf('string') == -1", id="indexOf absent"),
        pytest.param("'abc'.indexOf('c') == 2", id="strings indexOf kept"),
        # on a device
        pytest.param(
            'sets.contains(["A100", "H100"], [device.attributes["gpu.example.com"].model])',
            id="a device attribute in a set",
        ),
        pytest.param(
            '[device.attributes["gpu.example.com"].numa, 3].isSorted()'
            ' && device.attributes["gpu.example.com"].cores > 95.5',
            id="lists and a cross-type comparison on attributes",
        ),
    ],
)
def test_upstream_library_examples_hold(expression: str) -> None:
    assert ENV.compile(expression).matches(DEVICE) is True


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        pytest.param("[].min() == 0", "min called on empty list", id="min of an empty list"),
        pytest.param("[].max() == 0", "max called on empty list", id="max of an empty list"),
    ],
)
def test_upstream_library_errors(expression: str, message: str) -> None:
    with pytest.raises(SelectorError, match=message):
        ENV.compile(expression).matches(DEVICE)
