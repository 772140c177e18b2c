"""What integration tests hold of the cluster: ``Cluster`` (how to reach it,
and the plane when the tests started it), ``NodePool`` (a test's own nodes,
deleted afterwards) and an admin kubernetes-asyncio client.

The fixtures in ``tests/integration/conftest.py`` make these; tests import the
types from here (never from a conftest).
"""

from __future__ import annotations

import contextlib
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, config

from localcluster import ControlPlane

__all__ = ["EXISTING_KUBECONFIG_ENV", "Cluster", "NodePool", "new_api_client"]

EXISTING_KUBECONFIG_ENV = "PYSCHEDULER_TEST_KUBECONFIG"


@dataclass(frozen=True)
class Cluster:
    """What a test needs to reach the cluster; ``plane`` is None when the
    cluster was started by someone else and cannot be restarted by the test."""

    kubeconfig: Path
    plane: ControlPlane | None

    def require_plane(self) -> ControlPlane:
        if self.plane is None:
            pytest.skip(f"needs a control plane started by the tests ({EXISTING_KUBECONFIG_ENV})")
        return self.plane


async def new_api_client(kubeconfig: Path) -> client.ApiClient:
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    return client.ApiClient(configuration=configuration)


class NodePool:
    """Creates nodes for one test and deletes them all afterwards, so that
    tests sharing the session's control plane never see each other's nodes."""

    def __init__(self, core: client.CoreV1Api) -> None:
        self._core = core
        self.prefix = f"n{secrets.token_hex(3)}"
        self.names: list[str] = []

    async def create(self, node: dict[str, Any]) -> str:
        name = f"{self.prefix}-{node['metadata']['name']}"
        body = {**node, "metadata": {**node["metadata"], "name": name}}
        body["metadata"]["labels"] = {
            **node["metadata"].get("labels", {}),
            "kubernetes.io/hostname": name,
        }
        await self._core.create_node(body)
        self.names.append(name)
        return name

    async def delete(self, name: str) -> None:
        await self._core.delete_node(name)
        self.names.remove(name)

    async def delete_all(self) -> None:
        for name in list(self.names):
            with contextlib.suppress(client.ApiException):
                await self._core.delete_node(name)
        self.names.clear()
