"""AutoscaleEnforcerArgs: the agent port's limits (issue 20) set through the
plugin's ``pluginConfig`` args, validated with the path and wording of the
scheduler's other args errors, and handed to the listener."""

from __future__ import annotations

from typing import Any

import pytest

from plugins.autoscale_enforcer import AutoscaleEnforcerArgs
from plugins.registry import in_tree_registry
from scheduler.config.errors import Problem
from scheduler.config.plugin_args import validate_args
from scheduler.framework import ListenerLimits

LOC = ("profiles", 0, "pluginConfig", 0, "args")
PREFIX = "profiles[0].pluginConfig[0].args."


def problems_of(raw: dict[str, Any]) -> tuple[Any, list[str]]:
    problems: list[Problem] = []
    args = validate_args(in_tree_registry()["AutoscaleEnforcer"], raw, LOC, problems)
    return args, [str(problem) for problem in problems]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param({"agentMaxConnections": 0}, "agentMaxConnections: must be greater than zero"),
        pytest.param(
            {"agentRequestsPerTurn": -1}, "agentRequestsPerTurn: must be greater than zero"
        ),
        pytest.param(
            {"agentMaxUnreadResponseBytes": 10},
            "agentMaxUnreadResponseBytes: must be greater than or equal to 1024",
            id="back-pressure below one answer",
        ),
        pytest.param(
            {"agentRequestTimeoutSeconds": 0},
            "agentRequestTimeoutSeconds: must be greater than zero",
        ),
        pytest.param(
            {"agentIdleTimeoutSeconds": float("inf")},
            "agentIdleTimeoutSeconds: must be a finite number of seconds",
        ),
        pytest.param(
            {"reserveTimeoutSeconds": 7200},
            "reserveTimeoutSeconds: must be less than or equal to 3600",
        ),
        pytest.param(
            {"agentLivenessSeconds": 1.5},
            "agentLivenessSeconds: must be greater than 2 (twice the heartbeat interval of 1s)",
            id="liveness within two heartbeats",
        ),
        pytest.param(
            {"agentIdleTimeoutSeconds": "x"},
            "agentIdleTimeoutSeconds: must be a number, got str 'x'",
        ),
        pytest.param({"agentMaxConnection": 5}, "agentMaxConnection: unknown field", id="typo"),
    ],
)
def test_invalid_agent_port_limits_are_refused_with_their_path(
    raw: dict[str, Any], message: str
) -> None:
    args, problems = problems_of(raw)
    assert args is None
    assert problems == [PREFIX + message]


def test_agent_port_limits_from_args_reach_the_listener() -> None:
    raw = {
        "agentMaxConnections": 10,
        "agentRequestTimeoutSeconds": 5,
        "agentIdleTimeoutSeconds": 20,
        "agentMaxUnreadResponseBytes": 4096,
        "agentRequestsPerTurn": 2,
        "agentLivenessSeconds": 3,
    }
    args, problems = problems_of(raw)
    assert problems == []
    assert isinstance(args, AutoscaleEnforcerArgs)
    assert args.agent_limits() == ListenerLimits(
        max_connections=10,
        request_seconds=5.0,
        idle_seconds=20.0,
        high_water_bytes=4096,
        requests_per_turn=2,
        liveness_seconds=3.0,
    )


def test_default_agent_port_limits_are_the_listeners() -> None:
    assert AutoscaleEnforcerArgs().agent_limits() == ListenerLimits()
