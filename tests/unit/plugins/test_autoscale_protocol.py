"""AutoscaleEnforcer agent protocol: every version's units on the wire, version
negotiation with the reference's texts, response encoding, and the endpoint's
order of checks."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from plugins.autoscale_enforcer import agent
from plugins.autoscale_enforcer.agent_api import AgentApi
from plugins.autoscale_enforcer.config import parse_config
from plugins.autoscale_enforcer.protocol import (
    ProtocolError,
    ProtoVersion,
    encode_response,
    parse_request,
    version_string,
)
from plugins.autoscale_enforcer.state import Amounts, State
from tests.unit.plugins.autoscale_support import GI, amounts, config_doc, state_with_node, vm

POD = {"name": "vm-pod", "namespace": "default"}
METRICS = {"loadAvg1M": 0.5, "loadAvg5M": 0.25}


def body(**fields: Any) -> bytes:
    return orjson.dumps({"pod": POD, "metrics": METRICS, **fields})


@pytest.mark.parametrize(
    ("raw", "resources", "unit", "last_permit"),
    [
        pytest.param(
            body(protoVersion=1, resources={"vCPUs": 2, "mem": 3}),
            amounts(2, 3),
            None,
            None,
            id="v1.0 whole vCPUs and slots",
        ),
        pytest.param(
            body(protoVersion=2, resources={"vCPUs": 2, "mem": 3}),
            amounts(2, 3),
            None,
            None,
            id="v1.1",
        ),
        pytest.param(
            body(protoVersion=3, resources={"vCPUs": "1500m", "mem": 3}),
            amounts(1.5, 3),
            None,
            None,
            id="v2.0 millicpu quantity",
        ),
        pytest.param(
            body(protoVersion=3, resources={"vCPUs": 0.25, "mem": 1}),
            amounts(0.25, 1),
            None,
            None,
            id="v2.0 millicpu as a JSON number",
        ),
        pytest.param(
            body(
                protoVersion=4,
                resources={"vCPUs": 2, "mem": 2},
                lastPermit={"vCPUs": "500m", "mem": 1},
            ),
            amounts(2, 2),
            None,
            amounts(0.5, 1),
            id="v2.1 lastPermit",
        ),
        pytest.param(
            body(protoVersion=5, resources={"vCPUs": 2, "mem": 2}),
            amounts(2, 2),
            None,
            None,
            id="v3.0",
        ),
        pytest.param(
            body(
                protoVersion=6,
                resources={"vCPUs": 2, "mem": "2Gi"},
                computeUnit={"vCPUs": "250m", "mem": "1Gi"},
            ),
            amounts(2, 2),
            amounts(0.25, 1),
            None,
            id="v4.0 bytes and compute unit",
        ),
        pytest.param(
            body(
                protoVersion=7,
                resources={"vCPUs": 1, "mem": 1073741824},
                computeUnit={"vCPUs": 1, "mem": "512Mi"},
                lastPermit=None,
            ),
            amounts(1, 1),
            amounts(1, 0.5),
            None,
            id="v5.0 bytes as integer",
        ),
        pytest.param(
            orjson.dumps(
                {
                    "PROTOVERSION": 2,
                    "Pod": POD,
                    "RESOURCES": {"vcpus": 1, "MEM": 1},
                    "metrics": None,
                }
            ),
            amounts(1, 1),
            None,
            None,
            id="keys match case-insensitively",
        ),
        pytest.param(
            body(protoVersion=2, resources={"vCPUs": 1, "mem": 1}, surprise=[1, {"x": None}]),
            amounts(1, 1),
            None,
            None,
            id="unknown fields ignored",
        ),
    ],
)
def test_parse_units_per_version(
    raw: bytes, resources: Amounts, unit: Amounts | None, last_permit: Amounts | None
) -> None:
    request = parse_request(raw, GI)
    assert request.pod_key == "default/vm-pod"
    assert request.resources == resources
    assert request.compute_unit == unit
    assert request.last_permit == last_permit


@pytest.mark.parametrize(
    ("raw", "status", "text"),
    [
        pytest.param(b"{", 400, "bad JSON", id="syntax error"),
        pytest.param(b"[]", 400, "bad JSON", id="not an object"),
        pytest.param(body(protoVersion="2"), 400, "bad JSON", id="version as a string"),
        pytest.param(body(protoVersion=2.0), 400, "bad JSON", id="version as a float"),
        pytest.param(body(protoVersion=True), 400, "bad JSON", id="version as a bool"),
        pytest.param(body(protoVersion=-1), 400, "bad JSON", id="negative version"),
        pytest.param(body(protoVersion=2**32), 400, "bad JSON", id="version overflows uint32"),
        pytest.param(body(), 400, "Invalid protocol version <invalid: zero>", id="missing version"),
        pytest.param(
            body(protoVersion=0), 400, "Invalid protocol version <invalid: zero>", id="zero version"
        ),
        pytest.param(
            body(protoVersion=8),
            400,
            "Protocol version mismatch: Need v1.0 to v5.0 but got <unknown = v5.0 + 1>",
            id="future version",
        ),
        pytest.param(
            body(protoVersion=1, metrics=None, resources={"vCPUs": 1, "mem": 1}),
            400,
            "nil metrics not supported for protocol version v1.0",
            id="v1.0 nil metrics",
        ),
        pytest.param(
            body(protoVersion=2, resources={"vCPUs": 70000, "mem": 1}),
            400,
            "bad JSON",
            id="v1.1 vCPUs overflow uint16",
        ),
        pytest.param(
            body(protoVersion=2, resources={"vCPUs": "1", "mem": 1}),
            400,
            "bad JSON",
            id="v1.1 vCPUs as a string",
        ),
        pytest.param(
            body(protoVersion=3, resources={"vCPUs": "-1", "mem": 1}),
            400,
            "bad JSON",
            id="v2.0 negative millicpu",
        ),
        pytest.param(
            body(protoVersion=3, resources={"vCPUs": "5000000", "mem": 1}),
            400,
            "bad JSON",
            id="v2.0 millicpu overflows uint32",
        ),
        pytest.param(
            body(
                protoVersion=6,
                resources={"vCPUs": 1, "mem": "lots"},
                computeUnit={"vCPUs": 1, "mem": 1},
            ),
            400,
            "bad JSON",
            id="v4.0 bad byte quantity",
        ),
        pytest.param(
            body(protoVersion=2, resources={"vCPUs": 0, "mem": 1}),
            400,
            "invalid resources: vCPUs and mem must be non-zero",
            id="zero vCPUs",
        ),
        pytest.param(
            body(protoVersion=6, resources={"vCPUs": 1, "mem": "1Gi"}),
            400,
            "computeUnit fields must be non-zero: vCPUs must be non-zero",
            id="v4.0 without compute unit (handleAgentRequest: ValidateNonZero)",
        ),
        pytest.param(
            body(protoVersion=2, resources={"vCPUs": 1, "mem": 1}, metrics={"loadAvg1M": 1e39}),
            400,
            "bad JSON",
            id="metrics overflow float32",
        ),
        pytest.param(
            body(protoVersion=2, resources={"vCPUs": 1, "mem": 1}, pod={"name": 5}),
            400,
            "bad JSON",
            id="pod name not a string",
        ),
    ],
)
def test_refused_bodies(raw: bytes, status: int, text: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        parse_request(raw, GI)
    assert (caught.value.status, caught.value.message) == (status, text)


@pytest.mark.parametrize(
    ("version", "text"),
    [(0, "<invalid: zero>"), (1, "v1.0"), (4, "v2.1"), (7, "v5.0"), (9, "<unknown = v5.0 + 2>")],
)
def test_version_strings(version: int, text: str) -> None:
    assert version_string(version) == text


@pytest.mark.parametrize(
    ("version", "permit", "migrate", "expected"),
    [
        pytest.param(
            ProtoVersion.V1_1,
            amounts(3, 2),
            False,
            {"permit": {"vCPUs": 3, "mem": 2}, "resourceUnit": {"vCPUs": 1, "mem": 1}},
            id="v1.1 whole units and resourceUnit",
        ),
        pytest.param(
            ProtoVersion.V2_0,
            amounts(1.5, 2),
            False,
            {"permit": {"vCPUs": "1500m", "mem": 2}, "resourceUnit": {"vCPUs": 1, "mem": 1}},
            id="v2.0 millicpu",
        ),
        pytest.param(
            ProtoVersion.V3_0,
            amounts(2, 2),
            True,
            {"permit": {"vCPUs": 2, "mem": 2}, "migrate": {}},
            id="v3.0 no resourceUnit, migrate",
        ),
        pytest.param(
            ProtoVersion.V4_0,
            amounts(0.25, 1.5),
            False,
            {"permit": {"vCPUs": "250m", "mem": "1536Mi"}},
            id="v4.0 bytes as quantity",
        ),
        pytest.param(
            ProtoVersion.V5_0,
            Amounts(1000, 1000),
            False,
            {"permit": {"vCPUs": 1, "mem": 1000}},
            id="v5.0 small bytes as integer",
        ),
    ],
)
def test_response_encoding(
    version: ProtoVersion, permit: Amounts, migrate: bool, expected: dict[str, Any]
) -> None:
    assert orjson.loads(encode_response(version, permit, migrate, amounts(1, 1), GI)) == expected


# ------------------------------------------------------------- the endpoint
def vm_state(others: tuple[float, float] = (0, 0)) -> State:
    """Node n1 of 8 CPU / 8 GiB with VM pod default/vm-pod reserved at 2/2."""
    state = state_with_node(8, 8)
    assert state.reserve("default/vm-pod", "u", "n1", amounts(2, 2), vm("vm", max_=(8, 8)))
    if others != (0, 0):
        state.observe_pod("default/other", "uo", "n1", amounts(*others), None)
    return state


def api(state: State) -> AgentApi:
    return AgentApi(state, migration_allowed=lambda: False)


@pytest.mark.parametrize(
    ("others", "raw", "permit"),
    [
        pytest.param(
            (0, 0),
            body(protoVersion=2, resources={"vCPUs": 4, "mem": 4}),
            {"vCPUs": 4, "mem": 4},
            id="v1.1 full grant",
        ),
        pytest.param(
            (5, 5),
            body(protoVersion=2, resources={"vCPUs": 4, "mem": 4}),
            {"vCPUs": 3, "mem": 3},
            id="v1.1 partial grant",
        ),
        pytest.param(
            (5.5, 6),
            body(protoVersion=3, resources={"vCPUs": 4, "mem": 4}),
            {"vCPUs": 2, "mem": 2},
            id="v2.0 half a CPU left: no whole unit, denied",
        ),
        pytest.param(
            (6, 6),
            body(
                protoVersion=4, resources={"vCPUs": 4, "mem": 4}, lastPermit={"vCPUs": 3, "mem": 3}
            ),
            {"vCPUs": 3, "mem": 3},
            id="v2.1 lastPermit honoured",
        ),
        pytest.param(
            (5.5, 5),
            body(
                protoVersion=6,
                resources={"vCPUs": 4, "mem": "4Gi"},
                computeUnit={"vCPUs": "250m", "mem": "1Gi"},
            ),
            {"vCPUs": "2500m", "mem": "3Gi"},
            id="v4.0 quarter-CPU units",
        ),
        pytest.param(
            (6, 6),
            body(
                protoVersion=7,
                resources={"vCPUs": 1, "mem": "1Gi"},
                computeUnit={"vCPUs": 1, "mem": "1Gi"},
                metrics={"loadAvg1M": 0.1},
            ),
            {"vCPUs": 1, "mem": "1Gi"},
            id="v5.0 decrease always accepted",
        ),
    ],
)
def test_endpoint_grants(others: tuple[float, float], raw: bytes, permit: dict[str, Any]) -> None:
    answer = api(vm_state(others)).handle("POST", raw)
    assert answer.status == 200, answer.body
    assert answer.content_type == "application/json"
    assert orjson.loads(answer.body)["permit"] == permit


@pytest.mark.parametrize(
    ("method", "raw", "status", "text"),
    [
        pytest.param("GET", b"", 400, "must be POST", id="not POST"),
        pytest.param(
            "POST",
            body(
                protoVersion=2,
                resources={"vCPUs": 1, "mem": 1},
                pod={"name": "x", "namespace": "default"},
            ),
            404,
            "pod not found",
            id="unknown pod",
        ),
        pytest.param(
            "POST",
            body(
                protoVersion=2,
                resources={"vCPUs": 1, "mem": 1},
                pod={"name": "other", "namespace": "default"},
            ),
            404,
            "pod not found",
            id="non-VM pod",
        ),
        pytest.param(
            "POST",
            b" " * 1024 + body(protoVersion=2, resources={"vCPUs": 1, "mem": 1}),
            400,
            "bad JSON",
            id="body over 1 KiB is cut",
        ),
    ],
)
def test_endpoint_refusals_leave_state_unchanged(
    method: str, raw: bytes, status: int, text: str
) -> None:
    state = vm_state((1, 1))
    before = repr(state.nodes)
    answer = api(state).handle(method, raw)
    assert (answer.status, answer.content_type, answer.body.decode()) == (
        status,
        "text/plain",
        text,
    )
    assert repr(state.nodes) == before


def test_a_bug_caught_by_the_final_check_is_a_500_and_changes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The arithmetic no longer produces such a permit; break it to prove the net.
    monkeypatch.setattr(agent, "_grant", lambda requested, *_, **__: (requested + 1, 0))
    state = vm_state((1, 1))
    before = repr(state.nodes), repr(state.pods)
    answer = api(state).handle("POST", body(protoVersion=2, resources={"vCPUs": 4, "mem": 4}))
    assert (answer.status, answer.content_type) == (500, "text/plain")
    assert answer.body.startswith(b"internal error: refusing to answer permit")
    assert (repr(state.nodes), repr(state.pods)) == before


V4_BYTE = body(
    protoVersion=6,
    resources={"vCPUs": 1, "mem": 1},
    computeUnit={"vCPUs": 1, "mem": "1Gi"},
)


@pytest.mark.parametrize(
    ("others", "steps"),
    [
        pytest.param(
            (3, 3),
            [
                (V4_BYTE, {"vCPUs": 1, "mem": 1}),
                (body(protoVersion=2, resources={"vCPUs": 5, "mem": 5}), {"vCPUs": 5, "mem": 5}),
            ],
            id="hypothesis: v4.0 shrinks to 1 byte, then v1.1 asks 5 slots: full grant",
        ),
        pytest.param(
            (3, 6),
            [
                (V4_BYTE, {"vCPUs": 1, "mem": 1}),
                (body(protoVersion=2, resources={"vCPUs": 5, "mem": 5}), {"vCPUs": 5, "mem": 2}),
            ],
            id="1 byte then v1.1 partial grant: whole slots, not 1 GiB + 1 byte",
        ),
        pytest.param(
            (5.5, 0),
            [
                (body(protoVersion=3, resources={"vCPUs": "1500m", "mem": 2}), None),
                (body(protoVersion=2, resources={"vCPUs": 4, "mem": 4}), {"vCPUs": 2, "mem": 4}),
            ],
            id="1.5 CPU then v1.1 asks 4 with 1 CPU free: whole vCPUs (2), not 2.5",
        ),
        pytest.param(
            (4.5, 0),
            [
                (body(protoVersion=3, resources={"vCPUs": "1500m", "mem": 2}), None),
                (body(protoVersion=2, resources={"vCPUs": 4, "mem": 4}), {"vCPUs": 3, "mem": 4}),
            ],
            id="1.5 CPU then v1.1 asks 4 with 2 CPU free: 3 whole vCPUs",
        ),
    ],
)
def test_endpoint_mixed_version_sequences(
    others: tuple[float, float], steps: list[tuple[bytes, dict[str, Any] | None]]
) -> None:
    """A pod's agent may change protocol version (all of v1.0..v5.0 are served):
    every permit is expressible in the version it is answered in."""
    state = vm_state(others)
    for raw, permit in steps:
        answer = api(state).handle("POST", raw)
        assert answer.status == 200, answer.body
        if permit is not None:
            assert orjson.loads(answer.body)["permit"] == permit
        state.check_invariants()


def test_after_a_tiny_permit_a_v11_increase_on_a_full_node_keeps_memory_at_use() -> None:
    """1 byte (v4.0), then v1.1 asks 5 slots on a node whose memory is full:
    the VM stays reserved at its use (never below it, issue 25 #7), so the
    answer keeps memory at that one slot and grants the CPU that fits; the
    node's memory reservation does not grow."""
    state = vm_state((3, 8))
    assert api(state).handle("POST", V4_BYTE).status == 200
    memory_before = state.nodes["n1"].reserved.mem

    answer = api(state).handle(
        "POST", body(protoVersion=2, resources={"vCPUs": 5, "mem": 5}, metrics=None)
    )

    assert answer.status == 200, answer.body
    assert orjson.loads(answer.body)["permit"] == {"vCPUs": 5, "mem": 1}
    assert state.nodes["n1"].reserved.mem == memory_before
    state.check_invariants()


@pytest.mark.parametrize(
    ("version", "status", "text"),
    [
        *[pytest.param(v, 200, "", id=f"protoVersion {v} served") for v in range(1, 8)],
        pytest.param(
            8,
            400,
            "Protocol version mismatch: Need v1.0 to v5.0 but got <unknown = v5.0 + 1>",
            id="protoVersion 8 (after v5.0) refused",
        ),
        pytest.param(
            2**32 - 1,
            400,
            "Protocol version mismatch: Need v1.0 to v5.0 but got <unknown = v5.0 + 4294967288>",
            id="largest uint32 refused",
        ),
    ],
)
def test_endpoint_version_range(version: int, status: int, text: str) -> None:
    """Served: v1.0 (1) to v5.0 (7), a union of what reference releases accepted
    (v1.0-v4.0 up to v0.25.x, v3.0-v5.0 from v0.28.0); 6 is v4.0, in range."""
    resources: dict[str, Any] = {"vCPUs": 2, "mem": 2}
    extra: dict[str, Any] = {}
    if version >= 6:
        resources = {"vCPUs": 2, "mem": "2Gi"}
        extra = {"computeUnit": {"vCPUs": 1, "mem": "1Gi"}}
    answer = api(vm_state()).handle(
        "POST", body(protoVersion=version, resources=resources, **extra)
    )
    assert answer.status == status, answer.body
    if status != 200:
        assert answer.body.decode() == text


# ----------------------------------------------------- compute-unit rules
def v4(version: int, cpus: Any, mem: Any, unit: dict[str, Any]) -> bytes:
    return body(protoVersion=version, resources={"vCPUs": cpus, "mem": mem}, computeUnit=unit)


def slots(version: int, cpus: Any, mem: int) -> bytes:
    return body(protoVersion=version, resources={"vCPUs": cpus, "mem": mem})


UNEVEN = "requested resources {cpu: 3000m, mem: 2147483648} do not divide cleanly by previous"
HALF_SLOTS = {"vCPUs": "250m", "mem": "1536Mi"}


@pytest.mark.parametrize(
    ("steps", "unit_change"),
    [
        pytest.param(
            [
                (
                    v4(6, 1, "1Gi", HALF_SLOTS),
                    400,
                    "computeUnit is not divisible by VM memory "
                    "slot size: {0.25 1536Mi} not divisible by 1Gi",
                )
            ],
            None,
            id="handleAgentRequest: v4.0 compute unit of 1.5 slots refused",
        ),
        pytest.param(
            [
                (
                    v4(7, 1, "1Gi", {"vCPUs": 1, "mem": "1500Mi"}),
                    400,
                    "computeUnit is not "
                    "divisible by VM memory slot size: {1 1500Mi} not divisible by 1Gi",
                )
            ],
            None,
            id="handleAgentRequest: v5.0 compute unit of 1500Mi refused",
        ),
        pytest.param(
            [(v4(7, 1, "1Gi", {"vCPUs": "250m", "mem": "2Gi"}), 200, "")],
            None,
            id="handleAgentRequest: v5.0 compute unit of whole slots served",
        ),
        pytest.param(
            [(slots(2, 2, 2), 200, ""), (slots(2, 3, 2), 400, UNEVEN)],
            None,
            id="handleResources v0.1.13: v1.1 uneven after an answer refused",
        ),
        pytest.param(
            [(slots(2, 3, 2), 200, "")],
            None,
            id="handleResources v0.1.13: v1.1 uneven before any answer (no unit sent) served",
        ),
        pytest.param(
            [(slots(2, 2, 2), 200, ""), (slots(2, 1, 2), 400, "requested resources")],
            None,
            id="handleResources v0.1.13: v1.1 at the VM minimum still refused (no bounds rule)",
        ),
        pytest.param(
            [(slots(3, 2, 2), 200, ""), (slots(3, 3, 2), 200, "")],
            None,
            id="handleResources v0.6.0+: v2.0 uneven only warned",
        ),
        pytest.param(
            [(slots(5, 2, 2), 200, ""), (slots(5, 3, 2), 200, "")],
            None,
            id="handleResources v0.25.x: v3.0 uneven only warned",
        ),
        pytest.param(
            [(slots(5, 2, 2), 200, ""), (slots(5, 3, 3), 200, ""), (slots(5, 3, 3), 200, "")],
            (2, 2),
            id="runtime computeUnit change does not lock out a v3.0 agent",
        ),
        pytest.param(
            [(slots(2, 2, 2), 200, ""), (slots(2, 3, 3), 200, ""), (slots(2, 3, 3), 400, "")],
            (2, 2),
            id="runtime change: v1.1 checked against the unit last sent (old, then new)",
        ),
    ],
)
def test_compute_unit_rules_per_version(
    steps: list[tuple[bytes, int, str]], unit_change: tuple[int, int] | None
) -> None:
    """Neon's compute-unit checks by protocol line: from v4.0 the agent's unit
    must be whole VM memory slots (400); the divisibility 400 exists only for
    v1.0-v1.1 (v0.1.x) and is a warning later; ``unit_change`` replaces the
    config's computeUnit (in vCPUs, slots) after the first answer."""
    state = vm_state((1, 1))
    for index, (raw, status, text) in enumerate(steps):
        if index == 1 and unit_change is not None:
            doc = config_doc()
            doc["nodeDefaults"]["computeUnit"] = {"vCPUs": unit_change[0], "mem": unit_change[1]}
            state.set_config(parse_config(orjson.dumps(doc)))
        before = repr(state.nodes), repr(state.pods)
        answer = api(state).handle("POST", raw)
        assert answer.status == status, (index, answer.body)
        assert answer.body.decode().startswith(text)
        if status != 200:
            assert (repr(state.nodes), repr(state.pods)) == before
