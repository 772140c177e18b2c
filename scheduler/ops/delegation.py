"""Who may read the ops port: authentication and authorization delegated to
the API server, as kube-scheduler's secure serving does.

``DelegatedAuth.check`` decides one request from its ``Authorization`` header,
path and HTTP method:

1. a path in ``always_allow_paths`` (exact match, or a prefix when the entry
   ends in ``*`` as upstream's path authorizer; default ``/healthz``,
   ``/readyz``, ``/livez``) is allowed for anyone, token or not;
2. a bearer token is authenticated by a TokenReview; without one the request
   is ``system:anonymous`` in ``system:unauthenticated``; a token the API
   server rejects is answered 401;
3. a user in ``system:masters`` is allowed (upstream's privileged group);
   anyone else needs a SubjectAccessReview allowing the non-resource URL with
   the lower-case HTTP method as verb (``get /metrics``); refused is 403.

Answers are cached as upstream's delegating options do: token reviews for
``AUTHN_CACHE_TTL`` (10 s), allowed and denied access reviews for
``AUTHZ_ALLOW_TTL`` / ``AUTHZ_DENY_TTL`` (10 s each). A review that fails
(API server unreachable) is not cached and answers 401/403 with the cause, as
upstream does not fail open. Time comes from the injected clock; the reviews
are callables (``scheduler.kube.reviews``), so this module does no I/O itself.

Concurrent requests that miss the cache with the same key share one review
(single flight), and at most ``max_reviews`` reviews are in flight at once
(``MAX_REVIEWS_IN_FLIGHT``): a burst of anonymous requests costs one
SubjectAccessReview per distinct path, not one per request, and the reviews
themselves go through a client of their own (see ``scheduler.app.cli``), so they
never wait in the scheduling path's rate limiter. Anonymous requests are
still reviewed, as upstream's delegating authorizer reviews
``system:anonymous`` for any path not always allowed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar, cast

from scheduler.framework.clock import Clock
from scheduler.framework.services import TokenReviewError, TokenUser
from scheduler.kube.reviews import ReviewError, UserInfo

AUTHN_CACHE_TTL = 10.0
AUTHZ_ALLOW_TTL = 10.0
AUTHZ_DENY_TTL = 10.0
PRIVILEGED_GROUP = "system:masters"
ANONYMOUS = "system:anonymous"
UNAUTHENTICATED = "system:unauthenticated"
_BEARER = "bearer "
_MAX_CACHED = 4096
MAX_REVIEWS_IN_FLIGHT = 16


ANONYMOUS_USER = UserInfo(ANONYMOUS, groups=(UNAUTHENTICATED,))

# token -> the user, or None when the API server says the token is not valid.
TokenReviewer = Callable[[str], Awaitable[UserInfo | None]]
# (user, path, verb) -> (allowed, reason).
AccessReviewer = Callable[[UserInfo, str, str], Awaitable[tuple[bool, str]]]


def plugin_token_reviewer(
    review_token: TokenReviewer,
) -> Callable[[str], Awaitable[TokenUser | None]]:
    """``review_token`` as plugins see it (``PluginServices.review_token``):
    framework types, ``ReviewError`` raised as ``TokenReviewError``."""

    async def review(token: str) -> TokenUser | None:
        try:
            user = await review_token(token)
        except ReviewError as error:
            raise TokenReviewError(str(error)) from error
        if user is None:
            return None
        return TokenUser(user.username, user.uid, user.groups)

    return review


@dataclass(frozen=True)
class Decision:
    status: int  # 200 allowed, 401 unauthenticated, 403 forbidden
    reason: str = ""
    user: str = ""

    @property
    def allowed(self) -> bool:
        return self.status == 200


K = TypeVar("K")
V = TypeVar("V")


@dataclass
class _TtlCache(Generic[K, V]):
    clock: Clock
    entries: dict[K, tuple[float, V]] = field(default_factory=dict)

    def get(self, key: K) -> V | None:
        hit = self.entries.get(key)
        if hit is None:
            return None
        expires, value = hit
        if self.clock.now() >= expires:
            del self.entries[key]
            return None
        return value

    def put(self, key: K, value: V, ttl: float) -> None:
        if len(self.entries) >= _MAX_CACHED:
            now = self.clock.now()
            self.entries = {k: v for k, v in self.entries.items() if v[0] > now}
            if len(self.entries) >= _MAX_CACHED:
                self.entries.clear()
        self.entries[key] = (self.clock.now() + ttl, value)


class DelegatedAuth:
    def __init__(
        self,
        review_token: TokenReviewer,
        review_access: AccessReviewer,
        clock: Clock,
        always_allow_paths: Iterable[str] = ("/healthz", "/readyz", "/livez"),
        max_reviews: int = MAX_REVIEWS_IN_FLIGHT,
    ) -> None:
        self._review_token = review_token
        self._review_access = review_access
        self._slots = asyncio.Semaphore(max_reviews)
        self._flying: dict[object, asyncio.Future[object]] = {}
        paths = tuple(always_allow_paths)
        self._always = frozenset(p for p in paths if not p.endswith("*"))
        self._prefixes = tuple(p[:-1] for p in paths if p.endswith("*"))
        self._tokens: _TtlCache[str, tuple[UserInfo | None]] = _TtlCache(clock)
        self._access: _TtlCache[tuple[UserInfo, str, str], tuple[bool, str]] = _TtlCache(clock)

    async def check(self, authorization: str | None, path: str, method: str) -> Decision:
        if path in self._always or path.startswith(self._prefixes):
            return Decision(200)
        user = await self._authenticate(authorization)
        if isinstance(user, Decision):
            return user
        if PRIVILEGED_GROUP in user.groups:
            return Decision(200, user=user.username)
        verb = method.lower()
        key = (user, path, verb)
        cached = self._access.get(key)
        if cached is None:
            try:
                cached = await self._once(key, lambda: self._review_access(user, path, verb))
            except ReviewError as error:
                return Decision(403, f"authorization failed: {error}", user.username)
            self._access.put(key, cached, AUTHZ_ALLOW_TTL if cached[0] else AUTHZ_DENY_TTL)
        allowed, reason = cached
        if allowed:
            return Decision(200, user=user.username)
        why = f": {reason}" if reason else ""
        return Decision(
            403,
            f'forbidden: User "{user.username}" cannot {verb} path "{path}"{why}',
            user.username,
        )

    async def _once(self, key: object, review: Callable[[], Awaitable[V]]) -> V:
        """One review per key in flight, shared by every caller asking for it,
        and at most ``max_reviews`` reviews at once."""
        flying = self._flying.get(key)
        if flying is None:
            started: asyncio.Future[object] = asyncio.ensure_future(self._bounded(review))
            self._flying[key] = flying = started
            started.add_done_callback(lambda _: self._flying.pop(key, None))
        # shield: a caller that goes away does not cancel the others' review
        return cast(V, await asyncio.shield(flying))

    async def _bounded(self, review: Callable[[], Awaitable[V]]) -> V:
        async with self._slots:
            return await review()

    async def _authenticate(self, authorization: str | None) -> UserInfo | Decision:
        if not authorization:
            return ANONYMOUS_USER
        if not authorization.lower().startswith(_BEARER):
            return Decision(401, "Unauthorized: only bearer tokens are accepted")
        token = authorization[len(_BEARER) :].strip()
        if not token:
            return Decision(401, "Unauthorized: empty bearer token")
        cached = self._tokens.get(token)
        if cached is None:
            try:
                cached = (await self._once(("token", token), lambda: self._review_token(token)),)
            except ReviewError as error:
                return Decision(401, f"Unauthorized: token review failed: {error}")
            self._tokens.put(token, cached, AUTHN_CACHE_TTL)
        (user,) = cached
        if user is None:
            return Decision(401, "Unauthorized")
        return user
