"""Delegated authentication and authorization of the ops port: always-allowed
paths, anonymous and bearer requests, system:masters, the 10 s caches of
upstream's delegating options, and failures that never fail open."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from scheduler.ops.delegation import (
    AUTHN_CACHE_TTL,
    AUTHZ_DENY_TTL,
    DelegatedAuth,
    ReviewError,
    UserInfo,
)
from tests.support.clock import FakeClock

ALICE = UserInfo("alice", uid="u1", groups=("system:authenticated",))
ADMIN = UserInfo("admin", groups=("system:masters",))
SCRAPER = UserInfo("system:serviceaccount:mon:prom", groups=("system:serviceaccounts",))


@dataclass
class FakeApi:
    """The API server's answers: tokens to users; (user, path, verb) allowed."""

    tokens: dict[str, UserInfo] = field(default_factory=dict)
    allowed: set[tuple[str, str, str]] = field(default_factory=set)
    down: bool = False
    token_calls: int = 0
    access_calls: int = 0

    async def token(self, token: str) -> UserInfo | None:
        self.token_calls += 1
        if self.down:
            raise ReviewError("connection refused")
        return self.tokens.get(token)

    async def access(self, user: UserInfo, path: str, verb: str) -> tuple[bool, str]:
        self.access_calls += 1
        if self.down:
            raise ReviewError("connection refused")
        return (user.username, path, verb) in self.allowed, "no RBAC policy matched"


def _auth(api: FakeApi, clock: FakeClock | None = None, **kwargs: object) -> DelegatedAuth:
    return DelegatedAuth(api.token, api.access, clock or FakeClock(), **kwargs)  # type: ignore[arg-type]


def _api() -> FakeApi:
    return FakeApi(
        tokens={"t-alice": ALICE, "t-admin": ADMIN, "t-prom": SCRAPER},
        allowed={
            (SCRAPER.username, "/metrics", "get"),
            ("system:anonymous", "/public", "get"),
        },
    )


@pytest.mark.parametrize(
    ("header", "path", "method", "status"),
    [
        pytest.param(None, "/healthz", "GET", 200, id="anonymous healthz"),
        pytest.param(None, "/readyz", "GET", 200, id="anonymous readyz"),
        pytest.param(None, "/livez", "GET", 200, id="anonymous livez"),
        pytest.param("Bearer nonsense", "/livez", "GET", 200, id="always-allowed whatever token"),
        pytest.param(None, "/readyz/shutdown", "GET", 403, id="subpaths are not always allowed"),
        pytest.param(None, "/metrics", "GET", 403, id="anonymous metrics refused"),
        pytest.param(None, "/debug/pods/a/b", "GET", 403, id="anonymous debug refused"),
        pytest.param(None, "/configz", "GET", 403, id="anonymous configz refused"),
        pytest.param(None, "/public", "GET", 200, id="anonymous allowed by RBAC"),
        pytest.param("Bearer t-prom", "/metrics", "GET", 200, id="scraper reads metrics"),
        pytest.param("Bearer t-prom", "/metrics", "POST", 403, id="verb is the method"),
        pytest.param("Bearer t-prom", "/configz", "GET", 403, id="scraper no configz"),
        pytest.param("Bearer t-alice", "/metrics", "GET", 403, id="user without the role"),
        pytest.param("Bearer t-admin", "/debug/pods/a/b", "GET", 200, id="system:masters"),
        pytest.param("Bearer bogus", "/metrics", "GET", 401, id="invalid token"),
        pytest.param("Basic dXNlcjpwYXNz", "/metrics", "GET", 401, id="not a bearer"),
        pytest.param("Bearer ", "/metrics", "GET", 401, id="empty token"),
        pytest.param("bearer t-prom", "/metrics", "GET", 200, id="scheme case-insensitive"),
    ],
)
async def test_decision(header: str | None, path: str, method: str, status: int) -> None:
    assert (await _auth(_api()).check(header, path, method)).status == status


async def test_forbidden_names_user_verb_and_path() -> None:
    decision = await _auth(_api()).check("Bearer t-alice", "/metrics", "GET")

    assert decision.reason == (
        'forbidden: User "alice" cannot get path "/metrics": no RBAC policy matched'
    )


@pytest.mark.parametrize(
    ("paths", "path", "status"),
    [
        pytest.param(("/healthz", "/metrics"), "/metrics", 200, id="added path"),
        pytest.param(("/metrics",), "/healthz", 403, id="removed default"),
        pytest.param((), "/livez", 403, id="none"),
        pytest.param(("/debug/pods/*",), "/debug/pods/ns/p", 200, id="prefix with star"),
        pytest.param(("/debug/pods/*",), "/debug/podsx", 403, id="prefix is literal"),
        pytest.param(("/debug/pods/*",), "/metrics", 403, id="prefix only its paths"),
    ],
)
async def test_always_allow_paths_are_configurable(
    paths: tuple[str, ...], path: str, status: int
) -> None:
    auth = _auth(_api(), always_allow_paths=paths)

    assert (await auth.check(None, path, "GET")).status == status


async def test_token_reviews_are_cached_for_ten_seconds() -> None:
    api, clock = _api(), FakeClock()
    auth = _auth(api, clock)

    for _ in range(3):
        await auth.check("Bearer t-prom", "/metrics", "GET")
    assert (api.token_calls, api.access_calls) == (1, 1)

    clock.advance(AUTHN_CACHE_TTL)
    await auth.check("Bearer t-prom", "/metrics", "GET")
    assert (api.token_calls, api.access_calls) == (2, 2)


async def test_denials_are_cached_too_and_expire() -> None:
    api, clock = _api(), FakeClock()
    auth = _auth(api, clock)
    assert (await auth.check("Bearer t-alice", "/metrics", "GET")).status == 403

    api.allowed.add(("alice", "/metrics", "get"))  # the role is granted
    assert (await auth.check("Bearer t-alice", "/metrics", "GET")).status == 403
    clock.advance(AUTHZ_DENY_TTL)
    assert (await auth.check("Bearer t-alice", "/metrics", "GET")).status == 200


async def test_invalid_tokens_are_cached() -> None:
    api = _api()
    auth = _auth(api)

    for _ in range(2):
        assert (await auth.check("Bearer bogus", "/metrics", "GET")).status == 401
    assert api.token_calls == 1


@pytest.mark.parametrize(
    ("header", "status"),
    [
        pytest.param("Bearer t-prom", 401, id="token review fails: 401"),
        pytest.param(None, 403, id="access review fails: 403"),
    ],
)
async def test_a_failed_review_refuses_and_is_not_cached(header: str | None, status: int) -> None:
    api = _api()
    auth = _auth(api)
    api.down = True

    assert (await auth.check(header, "/metrics", "GET")).status == status
    assert (await auth.check(None, "/healthz", "GET")).status == 200

    api.down = False
    assert (await auth.check("Bearer t-prom", "/metrics", "GET")).status == 200


@dataclass
class GatedApi(FakeApi):
    """Reviews that wait for ``release``, counting how many are in flight."""

    release: asyncio.Event = field(default_factory=asyncio.Event)
    in_flight: int = 0
    most_in_flight: int = 0

    async def access(self, user: UserInfo, path: str, verb: str) -> tuple[bool, str]:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await self.release.wait()
            return await super().access(user, path, verb)
        finally:
            self.in_flight -= 1


async def _settle(api: GatedApi, want: int) -> None:
    for _ in range(1000):
        if api.in_flight >= want:
            return
        await asyncio.sleep(0)
    raise AssertionError(f"{api.in_flight} reviews in flight, wanted {want}")


@pytest.mark.parametrize(
    ("paths", "reviews", "most_at_once"),
    [
        pytest.param(["/metrics"] * 300, 1, 1, id="same path shares one review"),
        pytest.param([f"/x{i}" for i in range(40)], 40, 4, id="distinct paths bounded"),
    ],
)
async def test_concurrent_anonymous_requests_share_and_bound_reviews(
    paths: list[str], reviews: int, most_at_once: int
) -> None:
    api = GatedApi(allowed={("system:anonymous", "/metrics", "get")})
    auth = DelegatedAuth(api.token, api.access, FakeClock(), max_reviews=4)
    checks = [asyncio.ensure_future(auth.check(None, path, "GET")) for path in paths]
    await _settle(api, most_at_once)
    api.release.set()
    decisions = await asyncio.gather(*checks)
    assert api.access_calls == reviews
    assert api.most_in_flight == most_at_once
    assert {d.status for d in decisions} == ({200} if reviews == 1 else {403})
