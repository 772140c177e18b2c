"""Fixtures for tests against a real control plane.

- ``control_plane`` (session): etcd + kube-apiserver + kube-controller-manager
  started from the project's own binary, or, when ``PYSCHEDULER_TEST_KUBECONFIG``
  names a kubeconfig, that already-running cluster instead.
- ``kube`` (function): a kubernetes-asyncio ApiClient as the admin.
- ``namespace`` (function): a fresh namespace, deleted afterwards.

A failing test's report carries the tail of every component's log. The
objects the fixtures give (``Cluster``, ``NodePool``) live in
``tests.support.cluster``: tests import them from there, never from a conftest.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Generator, Iterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from localcluster import ControlPlane, ControlPlaneOptions
from tests.support.cluster import EXISTING_KUBECONFIG_ENV, Cluster, NodePool, new_api_client

_plane_key = pytest.StashKey["ControlPlane | None"]()


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
