"""Optional authentication of agent requests (``agentAuthentication``): a
ServiceAccount bearer token, checked by a TokenReview, cached.

Pure and synchronous; runs in the authority's process (one thread). The
review itself is the daemon's (``PluginServices.review_token``, on the ops
port's review client, never the scheduling path's limiter): the authority
sends ``ReviewToken`` and the daemon answers ``TokenReviewed``.

``AgentAuth.check(authorization)`` decides a request from its
``Authorization`` header:

- none, not ``Bearer``, or empty: 401 (``Unauthorized``), no review;
- a token whose verdict is cached (``ttl`` seconds, upstream's token-webhook
  cache keeps good and bad answers alike): that verdict;
- otherwise the request waits (``Wait``) for the token's review; the first
  request for a token starts it (``Wait.start``), later ones join it (single
  flight). At most ``max_reviews`` distinct tokens are reviewed at once; a
  new token beyond that is answered 429 without a review, so random tokens
  cannot queue unbounded work. A review not answered within
  ``review_seconds`` (``expired``) fails its waiters with 401.

A reviewed user is allowed when it is one of ``allowed``
(``system:serviceaccount:<namespace>:<name>``); another valid user is 403.
A review that failed (the API server did not answer) is 401 and not cached,
as upstream does not fail open. Answers are ``application/json`` Status
objects as the API server writes them (``kind: Status``, ``reason``
``Unauthorized`` / ``Forbidden`` / ``TooManyRequests``, ``code``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import orjson

from scheduler.framework import TokenUser

BEARER = "bearer "
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
CONTENT_TYPE_STATUS = "application/json"
MAX_CACHED = 4096


@dataclass(frozen=True, slots=True)
class Denied:
    status: int
    body: bytes


@dataclass(frozen=True, slots=True)
class Allowed:
    user: str


@dataclass(frozen=True, slots=True)
class Wait:
    token: str
    start: bool  # the first request for this token: send the review


Decision = Allowed | Denied | Wait


def status_body(code: int, reason: str, message: str) -> bytes:
    """A ``metav1.Status`` failure, as the API server answers."""
    return orjson.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }
    )


UNAUTHORIZED = Denied(401, status_body(401, "Unauthorized", "Unauthorized"))
TOO_MANY = Denied(
    429, status_body(429, "TooManyRequests", "too many token reviews in flight, retry")
)


def service_account_user(entry: str) -> str:
    """``namespace:name`` (or a full ``system:serviceaccount:`` name) as the
    username a TokenReview reports; raises ``ValueError`` on anything else."""
    name = entry.removeprefix(SERVICE_ACCOUNT_PREFIX)
    namespace, colon, account = name.partition(":")
    if not colon or not namespace or not account or ":" in account:
        raise ValueError(f"not a ServiceAccount (namespace:name): {entry!r}")
    return f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{account}"


@dataclass
class AgentAuth:
    allowed: frozenset[str]  # usernames (``service_account_user``)
    ttl: float
    review_seconds: float
    clock: Callable[[], float]
    max_reviews: int = 16
    _cache: dict[str, tuple[float, TokenUser | None]] = field(default_factory=dict)
    _flying: dict[str, float] = field(default_factory=dict)  # token -> started

    @classmethod
    def of(
        cls,
        accounts: Iterable[str],
        ttl: float,
        review_seconds: float,
        clock: Callable[[], float],
    ) -> AgentAuth:
        return cls(frozenset(map(service_account_user, accounts)), ttl, review_seconds, clock)

    def check(self, authorization: str) -> Decision:
        if not authorization.lower().startswith(BEARER):
            return UNAUTHORIZED
        token = authorization[len(BEARER) :].strip()
        if not token:
            return UNAUTHORIZED
        hit = self._cache.get(token)
        if hit is not None:
            expires, user = hit
            if self.clock() < expires:
                return self.judge(user)
            del self._cache[token]
        if token in self._flying:
            return Wait(token, start=False)
        if len(self._flying) >= self.max_reviews:
            return TOO_MANY
        self._flying[token] = self.clock()
        return Wait(token, start=True)

    def judge(self, user: TokenUser | None) -> Allowed | Denied:
        if user is None:
            return UNAUTHORIZED
        if user.username in self.allowed:
            return Allowed(user.username)
        return Denied(
            403,
            status_body(
                403,
                "Forbidden",
                f'forbidden: User "{user.username}" cannot use the agent API',
            ),
        )

    def reviewed(self, token: str, user: TokenUser | None, error: str = "") -> Allowed | Denied:
        """The daemon's answer for ``token``: cached unless the review failed."""
        self._flying.pop(token, None)
        if error:
            return Denied(
                401, status_body(401, "Unauthorized", f"Unauthorized: token review failed: {error}")
            )
        if len(self._cache) >= MAX_CACHED:
            now = self.clock()
            self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
            if len(self._cache) >= MAX_CACHED:
                self._cache.clear()
        self._cache[token] = (self.clock() + self.ttl, user)
        return self.judge(user)

    def expired(self) -> list[str]:
        """Tokens whose review took longer than ``review_seconds``: forgotten
        (their waiters are answered 401 by the caller)."""
        now = self.clock()
        late = [t for t, started in self._flying.items() if now - started >= self.review_seconds]
        for token in late:
            del self._flying[token]
        return late

    def next_expiry(self) -> float | None:
        """Seconds until the oldest review in flight times out (None: none)."""
        if not self._flying:
            return None
        return max(0.0, min(self._flying.values()) + self.review_seconds - self.clock())
