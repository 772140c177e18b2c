"""API paths of resource types."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from scheduler.kube.resources import (
    DEVICE_CLASSES,
    EVENTS,
    KNOWN_RESOURCES,
    NODES,
    PODS,
    RESOURCE_CLAIMS,
    ResourceType,
)


@pytest.mark.parametrize(
    ("resource", "namespace", "path"),
    [
        pytest.param(PODS, None, "/api/v1/pods", id="core, all namespaces"),
        pytest.param(PODS, "ns", "/api/v1/namespaces/ns/pods", id="core, one namespace"),
        pytest.param(NODES, None, "/api/v1/nodes", id="core, cluster-scoped"),
        pytest.param(
            RESOURCE_CLAIMS,
            "ns",
            "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims",
            id="group, namespaced",
        ),
        pytest.param(
            DEVICE_CLASSES, None, "/apis/resource.k8s.io/v1/deviceclasses", id="group, cluster"
        ),
    ],
)
def test_collection_path(resource: ResourceType, namespace: str | None, path: str) -> None:
    assert resource.collection_path(namespace) == path


@pytest.mark.parametrize(
    ("resource", "name", "namespace", "subresource", "path"),
    [
        pytest.param(
            PODS, "p", "ns", "binding", "/api/v1/namespaces/ns/pods/p/binding", id="pod binding"
        ),
        pytest.param(
            PODS, "p", "ns", "status", "/api/v1/namespaces/ns/pods/p/status", id="pod status"
        ),
        pytest.param(NODES, "n1", None, None, "/api/v1/nodes/n1", id="node"),
        pytest.param(
            EVENTS,
            "e",
            "ns",
            None,
            "/apis/events.k8s.io/v1/namespaces/ns/events/e",
            id="event",
        ),
        pytest.param(
            RESOURCE_CLAIMS,
            "c",
            "ns",
            "status",
            "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c/status",
            id="claim status",
        ),
    ],
)
def test_object_path(
    resource: ResourceType, name: str, namespace: str | None, subresource: str | None, path: str
) -> None:
    assert resource.object_path(name, namespace, subresource) == path


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda: PODS.object_path("p"), id="namespaced without a namespace"),
        pytest.param(lambda: NODES.collection_path("ns"), id="cluster-scoped with a namespace"),
        pytest.param(lambda: PODS.object_path("", "ns"), id="no name"),
    ],
)
def test_invalid_paths_are_refused(call: Callable[[], str]) -> None:
    with pytest.raises(ValueError, match=r"namespace|name"):
        call()


def test_api_version_and_known_plurals() -> None:
    assert PODS.api_version == "v1"
    assert RESOURCE_CLAIMS.api_version == "resource.k8s.io/v1"
    assert RESOURCE_CLAIMS.group_resource == "resourceclaims.resource.k8s.io"
    assert KNOWN_RESOURCES["resourceclaims"] is RESOURCE_CLAIMS
    assert KNOWN_RESOURCES["pods"] is PODS
