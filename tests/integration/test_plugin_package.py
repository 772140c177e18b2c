"""The out-of-tree plugin kit end to end: ``examples/plugin-package`` is
pip-installed into a fresh virtual environment, its own tests pass there, and
pyscheduler run from that environment with the package's
KubeSchedulerConfiguration places a pod differently (by PoolFilter and
PreferPool) from a profile with the default plugins only, on the real
control plane.

The fresh environment sees pyscheduler and its dependencies through a
``.pth`` file naming this checkout's environment; the plugin package itself is
built and installed into it by pip (``--no-deps``), whose isolated build gets
setuptools the way ``make venv`` does for the project (pip's index and cache).
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import aiohttp
import pytest
from kubernetes_asyncio import client

from localcluster.cluster import free_port
from localcluster.process import ComponentProcess
from tests.support.builders import make_node, make_pod
from tests.support.cluster import Cluster, NodePool
from tests.support.kubeapi import read_pod
from tests.support.ops import ops_get
from tests.support.wait import eventually

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "plugin-package"
POOL = "example.com/pool"


def _run(*argv: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [str(arg) for arg in argv], cwd=cwd, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"{argv}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def plugin_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the example installed by pip; returns its python."""
    work = tmp_path_factory.mktemp("plugin-kit")
    package = work / "plugin-package"
    shutil.copytree(EXAMPLE, package, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    venv = work / "venv"
    _run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    site = Path(
        _run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").strip()
    )
    ours = sysconfig.get_path("purelib")
    (site / "pyscheduler-checkout.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    _run(
        python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
        "--no-deps", package,
    )  # fmt: skip
    return python


def test_the_package_is_installed_and_its_own_tests_pass(plugin_venv: Path) -> None:
    listed = _run(plugin_venv, "-m", "pip", "show", "--files", "pyscheduler-pool-plugins")
    assert "entry_points.txt" in listed
    assert "pool_plugins/py.typed" in listed
    work = plugin_venv.parents[2] / "plugin-package"
    out = _run(plugin_venv, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=work)
    assert " passed" in out
    found = _run(
        plugin_venv,
        "-c",
        "from scheduler.framework.registry import entry_point_plugins as e;"
        "print(sorted(s.name for s in e()))",
    )
    assert found.strip() == "['PoolFilter', 'PreferPool']"


async def _wait_ready(process: ComponentProcess, base: str) -> None:
    async def ready() -> bool | None:
        assert process.running(), f"pyscheduler exited:\n{process.tail(40)}"
        try:
            return (await ops_get(base, "/readyz"))[0] == 200 or None
        except aiohttp.ClientConnectionError:
            return None

    await eventually(ready, timeout=60, what="pyscheduler from the plugin venv ready")


async def test_the_installed_plugins_change_where_a_pod_lands(
    plugin_venv: Path,
    control_plane: Cluster,
    kube: client.ApiClient,
    namespace: str,
    nodes: NodePool,
) -> None:
    core = client.CoreV1Api(kube)
    run = nodes.prefix
    names = {}
    for pool, cpu in (("blue", "4"), ("green", "4"), ("red", "32")):
        node = make_node(pool).capacity(cpu=cpu, memory="64Gi", pods="110")
        node = node.label(POOL, pool).label("example.com/run", run)
        names[pool] = await nodes.create(node.obj())
    port = free_port()
    process = ComponentProcess(
        "pyscheduler-plugins",
        [
            str(plugin_venv), "-m", "scheduler.app.cli",
            f"--config={EXAMPLE / 'scheduler-config.yaml'}",
            f"--kubeconfig={control_plane.kubeconfig}",
            f"--secure-port={port}", "--bind-address=127.0.0.1",
        ],
        plugin_venv.parents[2] / "pyscheduler.log",
    )  # fmt: skip
    process.start()
    try:
        await _wait_ready(process, f"https://127.0.0.1:{port}")
        for profile in ("pools", "plain"):
            pod = make_pod(profile, namespace).scheduler(profile).requests(cpu="1").obj()
            pod["spec"]["nodeSelector"] = {"example.com/run": run}
            await core.create_namespaced_pod(namespace, pod)

        async def placed() -> dict[str, str] | None:
            assert process.running(), process.tail(40)
            where = {}
            for profile in ("pools", "plain"):
                where[profile] = (await read_pod(core, namespace, profile))["spec"].get("nodeName")
            return where if all(where.values()) else None

        where = await eventually(placed, timeout=60, what="both pods bound")
    finally:
        await asyncio.to_thread(process.stop, 20.0)

    assert where == {"plain": names["red"], "pools": names["green"]}, process.tail(40)
