"""TokenReview and SubjectAccessReview through the API server, for the ops
port's delegated authentication and authorization (``scheduler.ops.delegation``).

``Reviews(client)`` gives the two callables ``DelegatedAuth`` takes. Any API
or transport error is raised as ``ReviewError``, never cached by the caller.
``UserInfo`` (who a token belongs to) and ``ReviewError`` live here, beside
the client that produces them, so the ops room depends on the kube floor and
not the other way round.
The reviews run at NORMAL priority: they must not delay binds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scheduler.kube.client import KubeClient
from scheduler.kube.errors import ApiError, TransportError
from scheduler.kube.ratelimit import Priority


@dataclass(frozen=True)
class UserInfo:
    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


class ReviewError(Exception):
    """A review could not be made (the API server did not answer it)."""


TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


def _user(info: dict[str, Any]) -> UserInfo:
    extra = info.get("extra") or {}
    return UserInfo(
        username=str(info.get("username", "")),
        uid=str(info.get("uid", "")),
        groups=tuple(str(group) for group in info.get("groups") or ()),
        extra=tuple(sorted((str(k), tuple(str(x) for x in v)) for k, v in extra.items())),
    )


class Reviews:
    def __init__(self, client: KubeClient) -> None:
        self._client = client

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            answer = await self._client.request("POST", path, body, priority=Priority.NORMAL)
        except (ApiError, TransportError) as error:
            raise ReviewError(str(error)) from error
        if not isinstance(answer, dict):
            raise ReviewError(f"POST {path}: not an object")
        return answer

    async def token(self, token: str) -> UserInfo | None:
        answer = await self._post(
            TOKEN_REVIEWS,
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenReview",
                "spec": {"token": token},
            },
        )
        status = answer.get("status") or {}
        if not status.get("authenticated"):
            return None
        return _user(status.get("user") or {})

    async def access(self, user: UserInfo, path: str, verb: str) -> tuple[bool, str]:
        spec: dict[str, Any] = {
            "user": user.username,
            "groups": list(user.groups),
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {key: list(values) for key, values in user.extra}
        answer = await self._post(
            ACCESS_REVIEWS,
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": spec,
            },
        )
        status = answer.get("status") or {}
        return bool(status.get("allowed")) and not status.get("denied"), str(
            status.get("reason", "")
        )
