"""Fixtures of the chaos suite and its summary table.

- ``proxy``: a ``FaultProxy`` in front of the test control plane; the
  scheduler under test reaches the API through ``proxy_kubeconfig``.
- ``scene``: all a scenario needs in one object: the cluster, a fresh
  namespace, its node pool, the proxy, and a ``Burst`` for a fresh scheduler
  name sized by ``size()``.
- ``outcome``: this scenario's row of the summary table, printed at the end of
  the pytest run (``pytest_terminal_summary``), zeros meaning nothing lost,
  bound twice, overcommitted or left different in the cache.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from tests.integration.chaos.harness import (
    FULL_ENV,
    OUTCOMES_KEY,
    Burst,
    Outcome,
    Scene,
    size,
    table,
)
from tests.support.cluster import Cluster, NodePool
from tests.support.faultproxy import FaultProxy
from tests.support.scheduler import unique_scheduler_name


@pytest.fixture
async def proxy(control_plane: Cluster) -> AsyncIterator[FaultProxy]:
    async with FaultProxy(control_plane.kubeconfig) as running:
        yield running


@pytest.fixture
def proxy_kubeconfig(proxy: FaultProxy, tmp_path: Path) -> Path:
    return proxy.write_kubeconfig(tmp_path / "via-proxy.kubeconfig")


@pytest.fixture
def outcome(request: pytest.FixtureRequest) -> Outcome:
    row = Outcome(scenario=request.node.name.removeprefix("test_"))
    outcomes = request.config.stash.setdefault(OUTCOMES_KEY, [])
    outcomes.append(row)
    return row


@pytest.fixture
def scene(  # noqa: PLR0917 - fixtures arrive as arguments
    control_plane: Cluster,
    kube: client.ApiClient,
    namespace: str,
    nodes: NodePool,
    proxy: FaultProxy,
    proxy_kubeconfig: Path,
    outcome: Outcome,
    tmp_path: Path,
) -> Scene:
    burst = Burst(client.CoreV1Api(kube), namespace, unique_scheduler_name(), size())
    return Scene(control_plane, kube, nodes, proxy, proxy_kubeconfig, burst, outcome, tmp_path)


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    outcomes = config.stash.get(OUTCOMES_KEY, [])
    if not outcomes:
        return
    shape = size()
    mode = "full" if shape.pods >= 500 else f"short (full: {FULL_ENV}=1 / make chaos)"
    terminalreporter.section(f"chaos summary, {mode}: {shape.pods} pods on {shape.nodes} nodes")
    for line in table(outcomes):
        terminalreporter.write_line(line)
    terminalreporter.write_line("(-1: the scenario stopped before that check)")
