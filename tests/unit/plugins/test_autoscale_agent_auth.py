"""Optional agent authentication (``agentAuthentication: ServiceAccountToken``):
the pure decision table (``AgentAuth``), the pending answer in the HTTP core
(a request waiting for its token's review holds its connection's later
answers, in order), and the whole path through the plugin with a fake
reviewer: 401/403 as Status JSON, one review per token (single flight),
cached for the TTL, not cached when the review failed."""

from __future__ import annotations

import asyncio
import contextlib
import selectors
import socket
from dataclasses import dataclass, field
from typing import cast

import orjson
import pytest

from plugins.autoscale_enforcer import AutoscaleEnforcer, AutoscaleEnforcerArgs
from plugins.autoscale_enforcer.agent_auth import (
    TOO_MANY,
    AgentAuth,
    Allowed,
    Decision,
    Denied,
    Wait,
    service_account_user,
)
from plugins.autoscale_enforcer.authority import (
    Authority,
    AuthSettings,
    ReviewToken,
    Start,
    TokenReviewed,
)
from scheduler.framework import (
    ChildChannel,
    Handle,
    HttpRequest,
    HttpResponse,
    PendingAnswer,
    TokenReviewError,
    TokenUser,
)
from scheduler.services.thread import HttpCore
from tests.support.builders import make_node, make_vm
from tests.unit.plugins.autoscale_support import make_config
from tests.unit.plugins.test_autoscale_plugin import FakeHandle, config_map, started, vm_pod

AGENT = TokenUser("system:serviceaccount:neonvm-system:autoscaler-agent")
OTHER = TokenUser("system:serviceaccount:default:someone")


@dataclass
class Clock:
    now: float = 100.0

    def __call__(self) -> float:
        return self.now


def auth(clock: Clock, max_reviews: int = 16) -> AgentAuth:
    made = AgentAuth.of(["neonvm-system:autoscaler-agent"], 10.0, 5.0, clock)
    made.max_reviews = max_reviews
    return made


def _status(decision: Decision) -> tuple[int, str]:
    assert isinstance(decision, Denied), decision
    body = orjson.loads(decision.body)
    assert (body["kind"], body["apiVersion"], body["status"]) == ("Status", "v1", "Failure")
    assert body["code"] == decision.status
    return decision.status, body["reason"]


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        pytest.param("", (401, "Unauthorized"), id="no Authorization header: 401"),
        pytest.param("Basic dXNlcjpwdw==", (401, "Unauthorized"), id="not a bearer token: 401"),
        pytest.param("Bearer   ", (401, "Unauthorized"), id="empty bearer token: 401"),
    ],
)
def test_requests_without_a_bearer_token_are_refused_without_a_review(
    header: str, expected: tuple[int, str]
) -> None:
    checker = auth(Clock())
    assert _status(checker.check(header)) == expected
    assert checker.next_expiry() is None  # no review started


@pytest.mark.parametrize(
    ("user", "expected"),
    [
        pytest.param(AGENT, (200, ""), id="the agent's ServiceAccount: allowed"),
        pytest.param(OTHER, (403, "Forbidden"), id="another valid user: 403"),
        pytest.param(None, (401, "Unauthorized"), id="a token the API server rejects: 401"),
    ],
)
def test_a_reviewed_token_is_judged_and_cached_for_the_ttl(
    user: TokenUser | None, expected: tuple[int, str]
) -> None:
    clock = Clock()
    checker = auth(clock)
    assert checker.check("Bearer t1") == Wait("t1", start=True)
    verdict = checker.reviewed("t1", user)
    got = (200, "") if isinstance(verdict, Allowed) else _status(verdict)
    assert got == expected
    clock.now += 9.9
    again = checker.check("bearer t1")  # the scheme is case-insensitive
    assert not isinstance(again, Wait), "the verdict was not cached"
    assert ((200, "") if isinstance(again, Allowed) else _status(again)) == expected
    clock.now += 0.2  # past the TTL: reviewed again
    assert checker.check("Bearer t1") == Wait("t1", start=True)


def test_concurrent_requests_with_one_token_share_one_review() -> None:
    checker = auth(Clock())
    assert checker.check("Bearer t") == Wait("t", start=True)
    assert checker.check("Bearer t") == Wait("t", start=False)
    assert checker.check("Bearer t") == Wait("t", start=False)


def test_a_failed_review_answers_401_and_is_not_cached() -> None:
    checker = auth(Clock())
    assert checker.check("Bearer t") == Wait("t", start=True)
    assert _status(checker.reviewed("t", None, "connection refused")) == (401, "Unauthorized")
    assert checker.check("Bearer t") == Wait("t", start=True)  # asked again


def test_new_tokens_beyond_the_review_cap_get_429_without_a_review() -> None:
    checker = auth(Clock(), max_reviews=2)
    assert checker.check("Bearer a") == Wait("a", start=True)
    assert checker.check("Bearer b") == Wait("b", start=True)
    assert checker.check("Bearer c") is TOO_MANY
    assert _status(TOO_MANY) == (429, "TooManyRequests")
    assert checker.check("Bearer a") == Wait("a", start=False)  # joining one is free
    checker.reviewed("a", AGENT)
    assert checker.check("Bearer c") == Wait("c", start=True)


def test_a_review_not_answered_in_time_expires() -> None:
    clock = Clock()
    checker = auth(clock)
    checker.check("Bearer t")
    assert checker.next_expiry() == 5.0
    clock.now += 4.9
    assert checker.expired() == []
    clock.now += 0.1
    assert checker.expired() == ["t"]
    assert checker.next_expiry() is None


@pytest.mark.parametrize(
    ("entry", "user"),
    [
        pytest.param("ns:sa", "system:serviceaccount:ns:sa", id="namespace:name"),
        pytest.param("system:serviceaccount:ns:sa", "system:serviceaccount:ns:sa", id="full name"),
    ],
)
def test_service_account_entries(entry: str, user: str) -> None:
    assert service_account_user(entry) == user


@pytest.mark.parametrize(
    "entries",
    [
        pytest.param(["sa"], id="no namespace"),
        pytest.param(["ns:"], id="no name"),
        pytest.param(["ns:a:b"], id="too many parts"),
        pytest.param([], id="none at all"),
    ],
)
def test_bad_service_account_entries_are_refused_in_the_args(entries: list[str]) -> None:
    with pytest.raises(ValueError, match="ServiceAccount"):
        AutoscaleEnforcerArgs.model_validate(
            {"agentAuthentication": "ServiceAccountToken", "agentServiceAccounts": entries}
        )


def test_authentication_is_off_by_default_and_unknown_modes_are_refused() -> None:
    assert AutoscaleEnforcerArgs().agent_authentication == "None"
    with pytest.raises(ValueError, match="agentAuthentication"):
        AutoscaleEnforcerArgs.model_validate({"agentAuthentication": "Token"})


# ------------------------------------------------------------ the HTTP core
def test_a_pending_answer_holds_the_connections_later_answers_in_order() -> None:
    pending: list[PendingAnswer] = []
    seen: list[tuple[str, str]] = []

    def handler(request: HttpRequest) -> HttpResponse | PendingAnswer:
        seen.append((request.path, request.authorization))
        if request.path == "/wait":
            pending.append(PendingAnswer())
            return pending[-1]
        return HttpResponse(200, "text/plain", request.path.encode())

    server = socket.create_server(("127.0.0.1", 0))
    selector = selectors.DefaultSelector()
    core = HttpCore(
        "pending", handler, max_body_bytes=8, gate=lambda: None, selector=selector, server=server
    )
    client = socket.create_connection(server.getsockname())
    client.settimeout(0.05)

    def turns(count: int = 20) -> bytes:
        got = b""
        for _ in range(count):
            core.new_turn()
            for key, mask in selector.select(0.01):
                core.dispatch(key, mask)
            with contextlib.suppress(TimeoutError):
                got += client.recv(65536)
        return got

    try:
        head = "POST {} HTTP/1.1\r\nAuthorization: Bearer abc\r\nContent-Length: 0\r\n\r\n"
        client.sendall(b"".join(head.format(p).encode() for p in ("/a", "/wait", "/b")))
        before = turns()
        assert b"/a" in before
        assert b"/b" not in before, "an answer overtook the pending one"
        assert [path for path, _ in seen] == ["/a", "/wait"], "read on while waiting"
        assert seen[0][1] == "Bearer abc"
        pending[0].resolve(HttpResponse(401, "application/json", b"{}"))
        after = turns()
        assert after.index(b"401 Unauthorized") < after.index(b"/b")
    finally:
        client.close()
        core.close()
        selector.close()


# ------------------------------------------------ through the plugin, inline
@dataclass
class FakeReviewer:
    answers: dict[str, TokenUser | None] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)
    fail: bool = False
    gate: asyncio.Event = field(default_factory=asyncio.Event)

    async def __call__(self, token: str) -> TokenUser | None:
        self.asked.append(token)
        await self.gate.wait()
        if self.fail:
            raise TokenReviewError("connection refused")
        return self.answers.get(token)


async def _started_with_auth(reviewer: FakeReviewer) -> FakeHandle:
    handle = FakeHandle()
    spawned: list[asyncio.Task[None]] = []
    handle.spawn = lambda name, work: spawned.append(asyncio.create_task(work))  # type: ignore[attr-defined]
    handle.services.set_token_reviewer(reviewer)
    AutoscaleEnforcer(
        AutoscaleEnforcerArgs(
            init_config_map_timeout_seconds=0.05, agent_authentication="ServiceAccountToken"
        ),
        cast(Handle, handle),
    )
    handle.informers.put(
        "nodes", make_node("n1").allocatable(cpu="8", memory="8Gi", pods="110").obj()
    )
    handle.informers.put("configmaps", config_map())
    await handle.services.start()
    handle.informers.put("virtualmachines", make_vm("vm").cpus(1, 8, 2).memory_slots(1, 8, 2).obj())
    handle.informers.put("pods", vm_pod("vm-pod", "vm", node="n1"))
    return handle


BODY = orjson.dumps(
    {
        "protoVersion": 2,
        "pod": {"namespace": "default", "name": "vm-pod"},
        "resources": {"vCPUs": 3, "mem": 3},
        "metrics": None,
    }
)


def _ask(handle: FakeHandle, token: str | None) -> HttpResponse | PendingAnswer:
    (listener,) = handle.services.process_listeners
    header = "" if token is None else f"Bearer {token}"
    return listener.handle_inline(HttpRequest("POST", "/", BODY, authorization=header))


async def _answer(answer: HttpResponse | PendingAnswer) -> HttpResponse:
    if isinstance(answer, HttpResponse):
        return answer
    done: asyncio.Future[HttpResponse] = asyncio.get_running_loop().create_future()
    answer.on_resolved(done.set_result)
    return await asyncio.wait_for(done, 5)


async def test_agent_requests_need_the_agents_token_when_authentication_is_on() -> None:
    reviewer = FakeReviewer({"good": AGENT, "other": OTHER})
    reviewer.gate.set()
    handle = await _started_with_auth(reviewer)
    anonymous = await _answer(_ask(handle, None))
    assert anonymous.status == 401
    assert orjson.loads(anonymous.body)["reason"] == "Unauthorized"
    assert anonymous.content_type == "application/json"
    assert reviewer.asked == []  # no token, no review
    forbidden = await _answer(_ask(handle, "other"))
    assert (forbidden.status, orjson.loads(forbidden.body)["reason"]) == (403, "Forbidden")
    bogus = await _answer(_ask(handle, "bogus"))
    assert bogus.status == 401
    granted = await _answer(_ask(handle, "good"))
    assert granted.status == 200
    assert orjson.loads(granted.body)["permit"] == {"vCPUs": 3, "mem": 3}
    assert (await _answer(_ask(handle, "good"))).status == 200
    assert reviewer.asked == ["other", "bogus", "good"]  # the second "good" was cached


async def test_requests_waiting_for_one_token_share_its_review() -> None:
    reviewer = FakeReviewer({"good": AGENT})
    handle = await _started_with_auth(reviewer)
    waiting = [_ask(handle, "good") for _ in range(3)]
    assert all(isinstance(a, PendingAnswer) and a.response is None for a in waiting)
    await asyncio.sleep(0.05)
    assert reviewer.asked == ["good"]
    reviewer.gate.set()
    assert [(await _answer(a)).status for a in waiting] == [200, 200, 200]
    assert reviewer.asked == ["good"]


async def test_a_failed_review_is_401_and_the_next_request_asks_again() -> None:
    reviewer = FakeReviewer({"good": AGENT}, fail=True)
    reviewer.gate.set()
    handle = await _started_with_auth(reviewer)
    failed = await _answer(_ask(handle, "good"))
    assert failed.status == 401
    assert "token review failed: connection refused" in orjson.loads(failed.body)["message"]
    reviewer.fail = False
    assert (await _answer(_ask(handle, "good"))).status == 200
    assert reviewer.asked == ["good", "good"]


async def test_without_authentication_no_token_is_needed() -> None:
    _, handle = await started()
    handle.informers.put("virtualmachines", make_vm("vm").cpus(1, 8, 2).memory_slots(1, 8, 2).obj())
    handle.informers.put("pods", vm_pod("vm-pod", "vm", node="n1"))
    answer = _ask(handle, None)
    assert isinstance(answer, HttpResponse)
    assert answer.status == 200


# ---------------------------------------------------------- the authority
class _Channel:
    immediate = True

    def __init__(self) -> None:
        self.sent: list[object] = []

    def send(self, message: object) -> None:
        self.sent.append(message)


def _authority(clock: Clock) -> tuple[Authority, _Channel]:
    channel = _Channel()
    authority = Authority(cast(ChildChannel, channel), clock)
    settings = AuthSettings(("neonvm-system:autoscaler-agent",), ttl=10.0, review_seconds=5.0)
    assert authority.receive(Start(make_config(), auth=settings)) is True
    return authority, channel


def test_requests_whose_review_never_comes_back_are_answered_401_when_it_times_out() -> None:
    clock = Clock()
    authority, channel = _authority(clock)
    first = authority.handle(HttpRequest("POST", "/", b"{}", authorization="Bearer t"))
    second = authority.handle(HttpRequest("POST", "/", b"{}", authorization="Bearer t"))
    assert isinstance(first, PendingAnswer)
    assert isinstance(second, PendingAnswer)
    assert [m for m in channel.sent if isinstance(m, ReviewToken)] == [ReviewToken("t")]
    wake = authority.idle()
    assert wake is not None
    assert wake <= 5.0  # the authority asks to be woken for the timeout
    assert first.response is None
    clock.now += 5.0
    authority.idle()
    for answer in (first, second):
        assert answer.response is not None
        assert answer.response.status == 401
        assert "timed out" in orjson.loads(answer.response.body)["message"]
    # a late answer for it is cached, and resolves nothing twice
    authority.receive(TokenReviewed("t", AGENT))
    third = authority.handle(HttpRequest("POST", "/", b"{}", authorization="Bearer t"))
    assert isinstance(third, HttpResponse)
    assert third.status == 400  # authenticated, then the body was judged: bad JSON


def test_without_auth_settings_the_authority_asks_for_no_token() -> None:
    channel = _Channel()
    authority = Authority(cast(ChildChannel, channel), Clock())
    authority.receive(Start(make_config()))
    answer = authority.handle(HttpRequest("POST", "/", b"{}"))
    assert isinstance(answer, HttpResponse)
    assert answer.status == 400
    assert not [m for m in channel.sent if isinstance(m, ReviewToken)]
