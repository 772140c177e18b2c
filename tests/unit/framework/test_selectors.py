"""Label, node and topology selector matching (scheduler.framework.selectors)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.selectors import (
    SelectorError,
    label_selector_matches,
    node_selector_terms_match,
    topology_selector_terms_match,
)

LABELS = {"zone": "a", "tier": "gold", "cores": "8"}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        pytest.param(None, False, id="nil selector matches nothing"),
        pytest.param({}, True, id="empty selector matches everything"),
        pytest.param({"matchLabels": {"zone": "a"}}, True, id="matchLabels equal"),
        pytest.param({"matchLabels": {"zone": "b"}}, False, id="matchLabels differ"),
        pytest.param({"matchExpressions": [expr("zone", "In", "a", "b")]}, True, id="In"),
        pytest.param({"matchExpressions": [expr("zone", "NotIn", "a")]}, False, id="NotIn"),
        pytest.param({"matchExpressions": [expr("gpu", "NotIn", "x")]}, True, id="NotIn absent"),
        pytest.param({"matchExpressions": [expr("tier", "Exists")]}, True, id="Exists"),
        pytest.param(
            {"matchExpressions": [expr("tier", "DoesNotExist")]}, False, id="DoesNotExist"
        ),
    ],
)
def test_label_selector(selector: dict[str, Any] | None, matches: bool) -> None:
    assert label_selector_matches(selector, LABELS) is matches


def test_invalid_label_selector_raises() -> None:
    with pytest.raises(SelectorError, match="must be non-empty"):
        label_selector_matches({"matchExpressions": [expr("zone", "In")]}, LABELS)


@pytest.mark.parametrize(
    ("terms", "matches"),
    [
        pytest.param([], False, id="no terms match nothing"),
        pytest.param([{}], False, id="an empty term matches nothing"),
        pytest.param([{"matchExpressions": [expr("zone", "In", "a")]}], True, id="one term"),
        pytest.param(
            [
                {"matchExpressions": [expr("zone", "In", "b")]},
                {"matchExpressions": [expr("tier", "Exists")]},
            ],
            True,
            id="terms are ORed",
        ),
        pytest.param(
            [{"matchExpressions": [expr("zone", "In", "a"), expr("tier", "In", "silver")]}],
            False,
            id="requirements are ANDed",
        ),
        pytest.param([{"matchExpressions": [expr("cores", "Gt", "4")]}], True, id="Gt"),
        pytest.param([{"matchExpressions": [expr("cores", "Lt", "4")]}], False, id="Lt"),
        pytest.param(
            [
                {"matchExpressions": [expr("cores", "Gt", "four")]},
                {"matchExpressions": [expr("zone", "Exists")]},
            ],
            True,
            id="an invalid term is skipped, not fatal",
        ),
        pytest.param([{"matchFields": [expr("metadata.name", "In", "n1")]}], True, id="field In"),
        pytest.param(
            [{"matchFields": [expr("metadata.name", "NotIn", "n1")]}], False, id="field NotIn"
        ),
    ],
)
def test_node_selector_terms(terms: list[dict[str, Any]], matches: bool) -> None:
    assert node_selector_terms_match(terms, LABELS, "n1") is matches


@pytest.mark.parametrize(
    ("terms", "matches"),
    [
        pytest.param([], True, id="no terms allow every node"),
        pytest.param([{"matchLabelExpressions": []}], False, id="an empty term matches nothing"),
        pytest.param(
            [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}], True, id="in"
        ),
        pytest.param(
            [{"matchLabelExpressions": [{"key": "zone", "values": ["b"]}]}], False, id="out"
        ),
        pytest.param(
            [{"matchLabelExpressions": [{"key": "zone", "values": []}]}], False, id="invalid"
        ),
    ],
)
def test_topology_selector_terms(terms: list[dict[str, Any]], matches: bool) -> None:
    assert topology_selector_terms_match(terms, LABELS) is matches
