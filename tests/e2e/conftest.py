"""The end-to-end suite (`make e2e`, issue 26): runs only with PYSCHEDULER_E2E=1.

It needs Linux, root and Debian packages (hack/e2e/setup-host.sh installs
them), so `make test` (pytest over tests/) skips it everywhere. The files run
in their numbered order against one session-scoped cluster: node, deployment,
scheduling, Prometheus, failover, DRA, out-of-tree plugins (the image built
with examples/plugin-package's wheel); each phase's wall time and results go into
the summary table printed at the end.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.cluster import Cluster, running_cluster
from tests.e2e.workloads import Deployed, deploy

ENABLED = os.environ.get("PYSCHEDULER_E2E") == "1"
_HERE = Path(__file__).parent.resolve()
# Generous: the machine is shared; a cold run builds images and binaries.
E2E_TIMEOUT_SECONDS = 3600
_STATE: dict[str, Any] = {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip = pytest.mark.skip(reason="end-to-end suite: run `make e2e` (PYSCHEDULER_E2E=1, root)")
    for item in items:
        if _HERE not in Path(item.path).resolve().parents:
            continue
        item.add_marker(pytest.mark.timeout(E2E_TIMEOUT_SECONDS))
        if not ENABLED:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    with running_cluster() as running:
        _STATE["cluster"] = running
        try:
            yield running
        except BaseException:
            print(running.log_tails())
            raise


@pytest.fixture(scope="session")
def deployed(cluster: Cluster) -> Deployed:
    return deploy(cluster)


@pytest.fixture(autouse=True)
def _log_tails_on_failure(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed and "cluster" in _STATE:
        print(_STATE["cluster"].log_tails())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    setattr(item, f"rep_{report.when}", report)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    cluster = _STATE.get("cluster")
    if cluster is None:
        return
    write = terminalreporter.write_line
    write("")
    write("=" * 30 + " pyscheduler end-to-end summary " + "=" * 30)
    width = max((len(key) for key in cluster.summary), default=10)
    for key, value in cluster.summary.items():
        write(f"  {key:<{width}}  {value}")
    write("  phase timings:")
    for name, seconds in cluster.timings.items():
        write(f"    {name:<{width + 10}}  {seconds:7.1f} s")
    write(f"    {'total':<{width + 10}}  {sum(cluster.timings.values()):7.1f} s")
