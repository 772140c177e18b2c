"""Storage helpers of the framework: PV node affinity and allowed topologies."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.volumes import pv_node_affinity_matches, topology_selector_terms_match
from tests.support.storage import make_pv

LABELS = {"zone": "a", "tier": "gold"}


@pytest.mark.parametrize(
    ("terms", "matches"),
    [
        pytest.param([], True, id="no terms allow every node"),
        pytest.param([{"matchLabelExpressions": []}], False, id="an empty term matches nothing"),
        pytest.param(
            [{"matchLabelExpressions": [{"key": "zone", "values": ["a", "b"]}]}], True, id="listed"
        ),
        pytest.param(
            [{"matchLabelExpressions": [{"key": "zone", "values": ["b"]}]}], False, id="unlisted"
        ),
        pytest.param(
            [
                {"matchLabelExpressions": [{"key": "zone", "values": ["b"]}]},
                {"matchLabelExpressions": [{"key": "tier", "values": ["gold"]}]},
            ],
            True,
            id="terms are ORed",
        ),
        pytest.param(
            [
                {
                    "matchLabelExpressions": [
                        {"key": "zone", "values": ["a"]},
                        {"key": "tier", "values": ["silver"]},
                    ]
                }
            ],
            False,
            id="expressions are ANDed",
        ),
        pytest.param(
            [{"matchLabelExpressions": [{"key": "zone", "values": []}]}], False, id="no values"
        ),
    ],
)
def test_topology_selector_terms(terms: list[dict[str, Any]], matches: bool) -> None:
    assert topology_selector_terms_match(terms, LABELS) is matches


def test_pv_node_affinity() -> None:
    assert pv_node_affinity_matches(make_pv("free").obj(), LABELS)
    assert pv_node_affinity_matches(make_pv("a").node_affinity("zone", "a").obj(), LABELS)
    assert not pv_node_affinity_matches(make_pv("b").node_affinity("zone", "b").obj(), LABELS)
    fields_only = make_pv("f").obj()
    fields_only["spec"]["nodeAffinity"] = {
        "required": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["x"]}]}
            ]
        }
    }
    # As upstream: the node is checked by its labels only, so fields are skipped.
    assert pv_node_affinity_matches(fields_only, LABELS)
