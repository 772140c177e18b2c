"""The agent API endpoint as a sans-I/O function: request in, response out.

``AgentApi.handle(method, body)`` runs the reference's order of checks and
answers ``(status, content type, body)``:

| status | when | body |
| --- | --- | --- |
| 400 | method is not POST | ``must be POST`` |
| 400 | body is not a valid request | ``bad JSON`` |
| 400 | ``protoVersion`` zero or missing | ``Invalid protocol version <invalid: zero>`` |
| 400 | version outside v1.0..v5.0 | ``Protocol version mismatch: Need v1.0 to v5.0 but got <v>`` |
| 400 | null ``metrics`` with v1.0 | ``nil metrics not supported for protocol version v1.0`` |
| 400 | zero resources | ``invalid resources: ...`` |
| 400 | zero compute unit (v4.0+) | ``computeUnit fields must be non-zero: ...`` |
| 404 | pod unknown or not a VM pod | ``pod not found`` |
| 400 | v4.0+ unit not whole slots | ``computeUnit is not divisible by VM memory slot size: ...`` |
| 400 | migrating pod asks to change size | ``cannot change resources: ...`` |
| 400 | v1.0-v1.1: uneven in the unit last sent | ``requested resources ... do not divide ...`` |
| 400 | increase, reservation off the grid, no room to round up | ``cannot grant increase: ...`` |
| 500 | a bug caught before anything changed | ``internal error: ...`` |
| 200 | the permit, in the request's version | JSON ``PluginResponse`` |

Errors are ``text/plain``; success is ``application/json``. Every non-200
answer leaves the state exactly as it was. Synchronous: the authority
(``authority.py``) calls it between the daemon's messages, one at a time, so
a request is atomic with respect to Reserve, Unreserve and informer events.
The state is read and changed in one section under ``lock`` (parsing and
encoding happen outside it), for a caller that shares the state across
threads.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from plugins.autoscale_enforcer.agent import (
    AgentInput,
    AgentOutcome,
    AgentRequestBug,
    RequestError,
    handle_request,
)
from plugins.autoscale_enforcer.protocol import (
    CONTENT_TYPE_ERROR,
    CONTENT_TYPE_JSON,
    MAX_HTTP_BODY_SIZE,
    ProtocolError,
    ProtoVersion,
    WireRequest,
    encode_response,
    go_bytes,
    go_resources,
    granularity,
    parse_request,
)
from plugins.autoscale_enforcer.state import State

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ApiAnswer:
    status: int
    content_type: str
    body: bytes
    node: str = ""  # the pod's node when known (metrics)
    outcome: AgentOutcome | None = None


def _error(status: int, message: str, node: str = "") -> ApiAnswer:
    return ApiAnswer(status, CONTENT_TYPE_ERROR, message.encode(), node)


class AgentApi:
    def __init__(
        self,
        state: State,
        migration_allowed: Callable[[], bool],
        lock: threading.Lock | None = None,
    ) -> None:
        """``lock`` guards ``state`` (the plugin shares its own; by default a new one)."""
        self._state = state
        self._migration_allowed = migration_allowed
        self._lock = lock or threading.Lock()

    def handle(self, method: str, body: bytes) -> ApiAnswer:
        if method != "POST":
            return _error(400, "must be POST")
        body = body[:MAX_HTTP_BODY_SIZE]  # the reference reads no more: longer is bad JSON
        state = self._state
        slot_bytes = state.config.slot_bytes
        try:
            wire = parse_request(body, slot_bytes)
        except ProtocolError as error:
            return _error(error.status, error.message)
        with self._lock:
            decided = self._decide(state, wire)
        if isinstance(decided, ApiAnswer):
            return decided
        outcome, node_name = decided
        body_out = encode_response(
            wire.version, outcome.permit, outcome.migrate, outcome.unit, slot_bytes
        )
        return ApiAnswer(200, CONTENT_TYPE_JSON, body_out, node_name, outcome)

    def _decide(self, state: State, wire: WireRequest) -> ApiAnswer | tuple[AgentOutcome, str]:
        """The locked section: the outcome and the pod's node, or the error answer."""
        pod = state.pods.get(wire.pod_key)
        node_name = pod.node if pod is not None else ""
        if pod is None or pod.vm is None:
            return _error(404, "pod not found")
        unit = wire.compute_unit
        slot = pod.vm.slot_bytes
        if unit is not None and slot > 0 and unit.mem % slot:
            # handleAgentRequest (v0.23.0-v0.41.0), after the pod lookup.
            return _error(
                400,
                f"computeUnit is not divisible by VM memory slot size: {go_resources(unit)} "
                f"not divisible by {go_bytes(slot)}",
                node_name,
            )
        node = state.nodes[node_name]
        request = AgentInput(
            pod_key=wire.pod_key,
            resources=wire.resources,
            unit=wire.compute_unit if wire.compute_unit is not None else node.unit,
            last_permit=wire.last_permit,
            metrics=wire.metrics,
            # The 400 exists only in Neon's v1.0-v1.1 line (handleResources
            # v0.1.8-v0.5.x); from v0.6.0 it is a warning for every version.
            check_unit=wire.version <= ProtoVersion.V1_1,
            granularity=granularity(wire.version, state.config.slot_bytes),
        )
        try:
            outcome = handle_request(state, request, migration_allowed=self._migration_allowed())
        except RequestError as error:
            return _error(error.status, error.message, node_name)
        except AgentRequestBug as error:
            log.error("agent request for %s: %s", wire.pod_key, error)
            return _error(500, f"internal error: {error}", node_name)
        return outcome, node_name
