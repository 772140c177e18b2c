"""NodeResourcesFitArgs: upstream v1 defaults and validation."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from plugins.node_resources_fit import (
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategyType,
)
from tests.unit.plugins.support import Obj


def test_defaults() -> None:
    args = NodeResourcesFitArgs.model_validate({})
    assert args.ignored_resources == ()
    assert args.ignored_resource_groups == ()
    assert args.scoring_strategy.type is ScoringStrategyType.LEAST_ALLOCATED
    assert args.scoring_strategy.resources == (
        ResourceSpec(name="cpu", weight=1),
        ResourceSpec(name="memory", weight=1),
    )
    assert args.scoring_strategy.requested_to_capacity_ratio is None


def test_camel_case_keys() -> None:
    args = NodeResourcesFitArgs.model_validate(
        {
            "ignoredResources": ["example.com/gpu"],
            "ignoredResourceGroups": ["example.org"],
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "resources": [
                    {"name": "cpu", "weight": 0},
                    {"name": "example.com/gpu", "weight": 5},
                ],
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
                },
            },
        }
    )
    assert args.ignored_resources == ("example.com/gpu",)
    assert args.ignored_resource_groups == ("example.org",)
    strategy = args.scoring_strategy
    assert strategy.type is ScoringStrategyType.REQUESTED_TO_CAPACITY_RATIO
    assert [(r.name, r.weight) for r in strategy.resources] == [("cpu", 1), ("example.com/gpu", 5)]
    assert strategy.requested_to_capacity_ratio is not None
    assert [(p.utilization, p.score) for p in strategy.requested_to_capacity_ratio.shape] == [
        (0, 0),
        (100, 10),
    ]


def test_empty_resources_get_the_defaults() -> None:
    args = NodeResourcesFitArgs.model_validate(
        {"scoringStrategy": {"type": "MostAllocated", "resources": []}}
    )
    assert [r.name for r in args.scoring_strategy.resources] == ["cpu", "memory"]


SHAPE = {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param({"ignoredResource": []}, "Extra inputs", id="unknown key"),
        pytest.param(
            {"scoringStrategy": {"type": "Balanced"}}, "LeastAllocated", id="unsupported type"
        ),
        pytest.param({"scoringStrategy": {}}, "type", id="strategy without type"),
        pytest.param(
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "cpu", "weight": 101}],
                }
            },
            "resource weight of cpu not in valid range (0, 100]",
            id="weight above 100",
        ),
        pytest.param(
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "cpu", "weight": -1}],
                }
            },
            "not in valid range",
            id="negative weight",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
            "requires requestedToCapacityRatio.shape",
            id="ratio without shape",
        ),
        pytest.param(
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": []},
                }
            },
            "at least one point",
            id="empty shape",
        ),
        pytest.param(
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]
                    },
                }
            },
            "increasing order",
            id="shape not increasing",
        ),
        pytest.param(
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": [{"utilization": 101, "score": 1}]},
                }
            },
            "less than or equal to 100",
            id="utilization above 100",
        ),
        pytest.param(
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": [{"utilization": 10, "score": 11}]},
                }
            },
            "less than or equal to 10",
            id="score above 10",
        ),
        pytest.param(
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "requestedToCapacityRatio": {"shape": [{"utilization": 10, "score": -1}]},
                }
            },
            "greater than or equal to 0",
            id="shape validated for any strategy",
        ),
        pytest.param(
            {"ignoredResourceGroups": ["example.com/gpu"]}, "can't contain '/'", id="group with /"
        ),
        pytest.param({"ignoredResources": ["bad name!"]}, "qualified name", id="bad resource name"),
        pytest.param({"ignoredResources": ["a/b/c"]}, "qualified name", id="two slashes"),
    ],
)
def test_invalid(raw: Obj, message: str) -> None:
    with pytest.raises(ValidationError) as raised:
        NodeResourcesFitArgs.model_validate(raw)
    assert message in str(raised.value)


def test_ratio_shape_refused_with_another_strategy() -> None:
    # Upstream ValidateNodeResourcesFitArgs: Forbidden unless the type uses it.
    with pytest.raises(ValidationError) as raised:
        NodeResourcesFitArgs.model_validate(
            {"scoringStrategy": {"type": "MostAllocated", "requestedToCapacityRatio": SHAPE}}
        )
    assert "must be nil when type is not RequestedToCapacityRatio" in str(raised.value)


def test_snake_case_field_names_work_in_code() -> None:
    args = NodeResourcesFitArgs(ignored_resources=("example.com/gpu",))
    assert args.ignored_resources == ("example.com/gpu",)
