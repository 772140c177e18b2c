"""Fuzzed agent requests (hypothesis): random bytes, wrong types, huge numbers,
unknown fields, oversized bodies and every protoVersion value. The endpoint
never crashes, never answers a 5xx, and a refused request changes nothing."""

from __future__ import annotations

import json
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugins.autoscale_enforcer.agent_api import AgentApi
from plugins.autoscale_enforcer.protocol import MAX_HTTP_BODY_SIZE
from plugins.autoscale_enforcer.state import State
from tests.unit.plugins.autoscale_support import amounts, state_with_node, vm

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
NASTY = st.one_of(
    st.integers(min_value=-3, max_value=20),
    st.sampled_from(
        [2**16, 2**32, 2**64, 2**70, -(2**63), 0.5, 1e39, "1", "1Gi", "250m", "-1", "1e3", "x"]
    ),
    JSON,
)
RESOURCES = st.one_of(
    st.fixed_dictionaries({"vCPUs": NASTY, "mem": NASTY}),
    st.fixed_dictionaries({"vCPUs": st.integers(1, 8), "mem": st.integers(1, 8)}),
    st.fixed_dictionaries(
        {"vCPUs": st.sampled_from([1, "500m", 2, "2500m"]), "mem": st.sampled_from(["1Gi", 2**31])}
    ),
    JSON,
)
REQUESTS = st.fixed_dictionaries(
    {"protoVersion": st.one_of(st.integers(min_value=-1, max_value=9), NASTY)},
    optional={
        "pod": st.one_of(
            st.just({"name": "vm-pod", "namespace": "default"}),
            st.just({"name": "other", "namespace": "default"}),
            JSON,
        ),
        "resources": RESOURCES,
        "lastPermit": RESOURCES,
        "computeUnit": RESOURCES,
        "metrics": st.one_of(st.none(), st.fixed_dictionaries({"loadAvg1M": NASTY}), JSON),
        "unknownField": JSON,
    },
)


def fresh_state() -> State:
    state = state_with_node(8, 8)
    assert state.reserve("default/vm-pod", "u", "n1", amounts(2, 2), vm("vm", max_=(8, 8)))
    state.observe_pod("default/other", "uo", "n1", amounts(3, 3), None)
    return state


def check(state: State, method: str, body: bytes) -> None:
    before = repr(state.nodes), repr(state.pods)
    answer = AgentApi(state, migration_allowed=lambda: True).handle(method, body)
    assert answer.status in (200, 400, 404), (answer.status, answer.body, body)
    if answer.status != 200:
        assert answer.content_type == "text/plain"
        assert (repr(state.nodes), repr(state.pods)) == before, body
    else:
        response = orjson.loads(answer.body)
        assert set(response) <= {"permit", "migrate", "resourceUnit"}
        assert response["permit"]["vCPUs"] not in (0, "0m")
        assert response["permit"]["mem"] != 0
    state.check_invariants()  # (grants within total: test_autoscale_properties)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2 * MAX_HTTP_BODY_SIZE))
def test_random_bytes(raw: bytes) -> None:
    check(fresh_state(), "POST", raw)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(REQUESTS, min_size=1, max_size=4))
def test_structured_requests_in_sequence(requests: list[dict[str, Any]]) -> None:
    state = fresh_state()
    for request in requests:
        check(state, "POST", json.dumps(request).encode())


@settings(max_examples=100, deadline=None)
@given(REQUESTS, st.integers(min_value=1, max_value=4 * MAX_HTTP_BODY_SIZE))
def test_oversized_bodies(request: dict[str, Any], padding: int) -> None:
    raw = json.dumps({**request, "padding": "x" * padding}).encode()
    state = fresh_state()
    check(state, "POST", raw)
    if len(raw) > MAX_HTTP_BODY_SIZE:
        answer = AgentApi(state, migration_allowed=lambda: True).handle("POST", raw)
        assert (answer.status, answer.body) == (400, b"bad JSON")


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(["GET", "PUT", "DELETE", "PATCH", "HEAD", "post"]), st.binary(max_size=64))
def test_other_methods(method: str, raw: bytes) -> None:
    check(fresh_state(), method, raw)
