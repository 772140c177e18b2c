"""Node selectors of slices, devices and allocations, as upstream's nodeaffinity."""

from __future__ import annotations

from typing import Any

import pytest

from plugins.dynamicresources.nodeselector import local_node_selector, node_selector_matches

LABELS = {"zone": "a", "gpus": "4"}


def term(*expressions: dict[str, Any], fields: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if expressions:
        body["matchExpressions"] = list(expressions)
    if fields:
        body["matchFields"] = list(fields)
    return body


def req(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


@pytest.mark.parametrize(
    ("terms", "expected"),
    [
        pytest.param([term(req("zone", "In", "a", "b"))], True, id="In"),
        pytest.param([term(req("zone", "NotIn", "a"))], False, id="NotIn"),
        pytest.param([term(req("missing", "NotIn", "a"))], True, id="NotIn on a missing label"),
        pytest.param([term(req("zone", "Exists"))], True, id="Exists"),
        pytest.param([term(req("zone", "DoesNotExist"))], False, id="DoesNotExist"),
        pytest.param([term(req("gpus", "Gt", "3"))], True, id="Gt"),
        pytest.param([term(req("gpus", "Lt", "3"))], False, id="Lt"),
        pytest.param([term(req("zone", "Gt", "3"))], False, id="Gt on a non-integer"),
        pytest.param(
            [term(req("zone", "In", "b")), term(req("gpus", "Exists"))], True, id="terms are ORed"
        ),
        pytest.param(
            [term(req("zone", "In", "a"), req("gpus", "In", "8"))], False, id="requirements ANDed"
        ),
        pytest.param([term()], False, id="an empty term matches nothing"),
        pytest.param(
            [term(fields=(req("metadata.name", "In", "node-1"),))], True, id="matchFields name"
        ),
        pytest.param(
            [term(fields=(req("metadata.uid", "In", "node-1"),))], False, id="other fields never"
        ),
    ],
)
def test_node_selector_matches(terms: list[dict[str, Any]], expected: bool) -> None:
    assert node_selector_matches({"nodeSelectorTerms": terms}, "node-1", LABELS) is expected


def test_local_node_selector_selects_only_that_node() -> None:
    selector = local_node_selector("node-1")
    assert node_selector_matches(selector, "node-1", {})
    assert not node_selector_matches(selector, "node-2", {})
