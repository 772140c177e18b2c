"""The chaos suite's fault proxy: which requests it treats as binds, status
writes, events, lists and watches (the kinds its faults target)."""

from __future__ import annotations

import pytest

from tests.support.faultproxy import Kind, classify


@pytest.mark.parametrize(
    ("method", "path", "query", "kind"),
    [
        pytest.param("POST", "/api/v1/namespaces/a/pods/p/binding", {}, Kind.BIND, id="bind"),
        pytest.param("PATCH", "/api/v1/namespaces/a/pods/p/status", {}, Kind.STATUS, id="status"),
        pytest.param("GET", "/api/v1/namespaces/a/pods/p/status", {}, Kind.OTHER, id="status read"),
        pytest.param(
            "POST", "/apis/events.k8s.io/v1/namespaces/a/events", {}, Kind.EVENT, id="event"
        ),
        pytest.param(
            "PATCH", "/apis/events.k8s.io/v1/namespaces/a/events/e", {}, Kind.EVENT, id="series"
        ),
        pytest.param("GET", "/api/v1/pods", {"watch": "true"}, Kind.WATCH, id="pod watch"),
        pytest.param("GET", "/api/v1/nodes", {"limit": "500"}, Kind.LIST, id="node list"),
        pytest.param("GET", "/api/v1/pods", {}, Kind.LIST, id="pod list"),
        pytest.param(
            "POST",
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            {},
            Kind.REVIEW,
            id="an ops-port access review",
        ),
        pytest.param(
            "POST",
            "/apis/authentication.k8s.io/v1/tokenreviews",
            {},
            Kind.REVIEW,
            id="token review",
        ),
        pytest.param(
            "PUT",
            "/apis/coordination.k8s.io/v1/namespaces/a/leases/l",
            {},
            Kind.LEASE,
            id="lease renew is its own kind (faulted only when asked)",
        ),
    ],
)
def test_classify(method: str, path: str, query: dict[str, str], kind: Kind) -> None:
    assert classify(method, path, query) is kind
