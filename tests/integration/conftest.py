"""Fixtures for tests against a real control plane.

- ``control_plane`` (session): etcd + kube-apiserver + kube-controller-manager
  started from the project's own binary, or, when ``PYSCHEDULER_TEST_KUBECONFIG``
  names a kubeconfig, that already-running cluster instead.
- ``kube`` (function): a kubernetes-asyncio ApiClient as the admin.
- ``namespace`` (function): a fresh namespace, deleted afterwards.

A failing test's report carries the tail of every component's log.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import AsyncIterator, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, config

from localcluster import ControlPlane, ControlPlaneOptions

EXISTING_KUBECONFIG_ENV = "PYSCHEDULER_TEST_KUBECONFIG"
_plane_key = pytest.StashKey["ControlPlane | None"]()


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


@pytest.fixture(scope="session")
def control_plane(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    existing = os.environ.get(EXISTING_KUBECONFIG_ENV)
    if existing:
        request.config.stash[_plane_key] = None
        yield Cluster(kubeconfig=Path(existing), plane=None)
        return
    with ControlPlane(ControlPlaneOptions(controller_manager=True)) as plane:
        request.config.stash[_plane_key] = plane
        yield Cluster(kubeconfig=plane.kubeconfig, plane=plane)
        request.config.stash[_plane_key] = None


async def new_api_client(kubeconfig: Path) -> client.ApiClient:
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    return client.ApiClient(configuration=configuration)


@pytest.fixture
async def kube(control_plane: Cluster) -> AsyncIterator[client.ApiClient]:
    api = await new_api_client(control_plane.kubeconfig)
    async with api:
        yield api


@pytest.fixture
async def namespace(kube: client.ApiClient) -> AsyncIterator[str]:
    name = f"t-{secrets.token_hex(4)}"
    core = client.CoreV1Api(kube)
    await core.create_namespace({"metadata": {"name": name}})
    yield name
    await core.delete_namespace(name, propagation_policy="Background")


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


@pytest.fixture
async def nodes(kube: client.ApiClient) -> AsyncIterator[NodePool]:
    pool = NodePool(client.CoreV1Api(kube))
    yield pool
    await pool.delete_all()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        plane = item.config.stash.get(_plane_key, None)
        if plane is not None:
            report.sections.append(("control plane logs", plane.log_tails()))
    return report
