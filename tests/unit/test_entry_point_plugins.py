"""Third-party plugins installed with pip register through the
``pyscheduler.plugins`` entry-point group and are enabled from the
configuration like in-tree ones."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler.config import parse_config
from scheduler.engine.assembly import build_registry, resolve
from scheduler.framework import ExtensionPoint
from scheduler.framework.registry import ENTRY_POINT_GROUP, RegistryError, entry_point_plugins

_PLUGIN_MODULE = """
from scheduler.framework import FilterPlugin, PluginSpec, Status


class GpuPacking(FilterPlugin):
    name = "GpuPacking"

    def filter(self, state, pod, node_info):
        return None


SPEC = PluginSpec(name="GpuPacking", plugin_class=GpuPacking, factory=lambda a, h: GpuPacking())
NOT_A_SPEC = object()
"""


def _install(site: Path, target: str) -> None:
    """A minimal installed distribution: a module and its dist-info."""
    (site / "gpu_packing_plugin.py").write_text(_PLUGIN_MODULE)
    info = site / "gpu_packing_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: gpu-packing-plugin\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nGpuPacking = {target}\n")


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Path]:
    sys.path.insert(0, str(tmp_path))
    yield tmp_path
    sys.path.remove(str(tmp_path))
    sys.modules.pop("gpu_packing_plugin", None)


def test_installed_plugin_is_found_and_can_be_enabled(site: Path) -> None:
    _install(site, "gpu_packing_plugin:SPEC")
    assert [spec.name for spec in entry_point_plugins()] == ["GpuPacking"]
    registry = build_registry()
    config = parse_config(
        textwrap.dedent(
            """
            apiVersion: kubescheduler.config.k8s.io/v1
            kind: KubeSchedulerConfiguration
            profiles:
            - schedulerName: pyscheduler
              plugins:
                filter:
                  enabled: [{name: GpuPacking}]
            """
        )
    )
    (profile,) = resolve(config, registry)
    assert "GpuPacking" in [ref.name for ref in profile.plugins[ExtensionPoint.FILTER]]


def test_entry_point_that_is_not_a_plugin_spec_is_refused_by_name(site: Path) -> None:
    _install(site, "gpu_packing_plugin:NOT_A_SPEC")
    with pytest.raises(RegistryError, match="GpuPacking"):
        entry_point_plugins()
