"""Every in-tree plugin that signs pods keeps the SignPlugin promise: pods
with equal signatures get equal verdicts and scores on every node, whatever
the other nodes of the cycle (``scheduler.testing.check_signature_promise``),
over one pool of pods (each with a twin that differs only in name and
labels, and pods differing in what some plugin reads) and one pool of nodes
(small, big, tainted, cordoned, labelled, with images, ports and pods)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, cast
from unittest.mock import MagicMock

import pytest

from plugins import (
    dynamicresources,
    image_locality,
    node_affinity,
    node_declared_features,
    node_name,
    node_ports,
    node_resources_balanced_allocation,
    node_resources_fit,
    node_unschedulable,
    node_volume_limits,
    taint_toleration,
    volume_binding,
    volume_restrictions,
    volume_zone,
)
from plugins.image_locality.index import ImageIndex
from plugins.image_locality.plugin import ImageLocality
from plugins.registry import in_tree_registry
from scheduler.config.plugin_args import validate_args
from scheduler.framework import (
    CycleState,
    FilterPlugin,
    Handle,
    NodeInfo,
    Plugin,
    PluginSpec,
    Pod,
    SignPlugin,
    Status,
)
from scheduler.testing import check_signature_promise
from tests.support.builders import PodBuilder, expression, make_node, make_pod, term
from tests.support.storage import FakeInformers as StorageInformers
from tests.unit.plugins import volume_binding_support
from tests.unit.plugins.dynamicresources.fakes import make_plugin as make_dynamic_resources
from tests.unit.plugins.support import (
    FakeHandle,
    FakeInformers,
    FakeSnapshot,
    Obj,
    node_info,
    pod,
)

Builder = Callable[[Sequence[NodeInfo]], Plugin]


def _shapes() -> list[PodBuilder]:
    """One builder per pod shape; each becomes two pods (twins)."""
    return [
        make_pod("plain"),
        make_pod("small").requests(cpu="500m", memory="256Mi"),
        make_pod("large").requests(cpu="3", memory="1Gi"),
        make_pod("huge").requests(cpu="16"),
        make_pod("tolerant").requests(cpu="500m").toleration("dedicated", "gpu", "NoSchedule"),
        make_pod("prefers").toleration("soft", "", "PreferNoSchedule", operator="Exists"),
        make_pod("pool-a").node_selector(pool="a"),
        make_pod("zone-b").required_node_affinity(
            term(expression("topology.kubernetes.io/zone", "In", "b"))
        ),
        make_pod("likes-a").preferred_node_affinity(10, term(expression("pool", "In", "a"))),
        make_pod("port").host_port(8080),
        make_pod("other-port").host_port(9090),
        make_pod("pinned").node("small-1"),
        make_pod("nginx").image("nginx:1.27"),
        make_pod("redis").image("redis:7").requests(cpu="1"),
    ]


def _pods() -> list[Pod]:
    result = []
    for index, shape in enumerate(_shapes()):
        for twin in ("a", "b"):
            raw = shape.obj()
            name = f"{raw['metadata']['name']}-{twin}"
            raw["metadata"] = {
                **raw["metadata"],
                "name": name,
                "uid": f"uid-{index}-{twin}",
                "labels": {"twin": twin, "shape": str(index)},
            }
            result.append(pod(raw))
    return result


def _node_objects() -> list[Obj]:
    return [
        make_node("small-1").capacity(cpu="2", memory="4Gi", pods="110").obj(),
        make_node("big-1").capacity(cpu="8", memory="32Gi", pods="110").zone("b").obj(),
        make_node("tainted")
        .capacity(cpu="8", memory="32Gi", pods="110")
        .taint("dedicated", "gpu", "NoSchedule")
        .obj(),
        make_node("soft-tainted")
        .capacity(cpu="4", memory="8Gi", pods="110")
        .taint("soft", "", "PreferNoSchedule")
        .label("pool", "a")
        .obj(),
        make_node("cordoned").capacity(cpu="4", memory="8Gi").unschedulable().obj(),
        make_node("pool-a")
        .capacity(cpu="4", memory="8Gi", pods="110")
        .label("pool", "a")
        .zone("a")
        .image(300 * 1024 * 1024, "nginx:1.27")
        .obj(),
        make_node("images")
        .capacity(cpu="4", memory="8Gi", pods="110")
        .image(500 * 1024 * 1024, "redis:7", "docker.io/library/redis:7")
        .obj(),
    ]


def _nodes() -> list[NodeInfo]:
    busy = make_pod("busy").requests(cpu="1", memory="1Gi").host_port(8080).node("big-1")
    running = {"big-1": [busy.obj()]}
    return [node_info(raw, *running.get(raw["metadata"]["name"], [])) for raw in _node_objects()]


def _from_spec(spec: PluginSpec[Any]) -> Builder:
    """The plugin built by its factory, default arguments, a handle over the nodes."""

    def build(nodes: Sequence[NodeInfo]) -> Plugin:
        args = validate_args(spec, None, ("pluginConfig", spec.name, "args"), [])
        handle = FakeHandle(FakeSnapshot(nodes), FakeInformers())
        return spec.factory(args, cast(Handle, handle))

    return build


def _image_locality(nodes: Sequence[NodeInfo]) -> Plugin:
    """Its image index fed by the node informer, as in the scheduler."""
    index = ImageIndex()
    for raw in _node_objects():
        index.on_node_change(None, raw)
    return ImageLocality(cast(Handle, FakeHandle(FakeSnapshot(nodes), FakeInformers())), index)


def _volume_binding(nodes: Sequence[NodeInfo]) -> Plugin:
    plugin, _, _ = volume_binding_support.build(StorageInformers())
    return plugin


def _dynamic_resources(nodes: Sequence[NodeInfo]) -> Plugin:
    plugin, _ = make_dynamic_resources()
    return plugin


SIGNING: dict[str, Builder] = {
    node_unschedulable.NAME: _from_spec(node_unschedulable.SPEC),
    node_name.NAME: _from_spec(node_name.SPEC),
    taint_toleration.NAME: _from_spec(taint_toleration.SPEC),
    node_affinity.NAME: _from_spec(node_affinity.SPEC),
    node_ports.NAME: _from_spec(node_ports.SPEC),
    node_resources_fit.NAME: _from_spec(node_resources_fit.SPEC),
    volume_restrictions.NAME: _from_spec(volume_restrictions.SPEC),
    node_volume_limits.NAME: _from_spec(node_volume_limits.SPEC),
    volume_binding.NAME: _volume_binding,
    volume_zone.NAME: _from_spec(volume_zone.SPEC),
    dynamicresources.NAME: _dynamic_resources,
    node_resources_balanced_allocation.NAME: _from_spec(node_resources_balanced_allocation.SPEC),
    image_locality.NAME: _image_locality,
    node_declared_features.NAME: _from_spec(node_declared_features.SPEC),
}


def test_the_table_lists_every_in_tree_plugin_that_signs() -> None:
    registry = in_tree_registry()
    signing = set()
    for name in registry:
        spec = registry[name]
        args = validate_args(spec, None, ("pluginConfig", name, "args"), [])
        if isinstance(spec.factory(args, MagicMock()), SignPlugin):
            signing.add(name)
    assert signing == set(SIGNING)


@pytest.mark.parametrize("name", sorted(SIGNING))
def test_equal_signatures_get_equal_verdicts_and_scores(name: str) -> None:
    nodes = _nodes()
    plugin = SIGNING[name](nodes)
    assert plugin.name == name
    assert check_signature_promise(plugin, _pods(), nodes) >= len(nodes)


# -------------------------------------------------- the helper can fail
class PeeksAtLabels(FilterPlugin, SignPlugin):
    """Signs by requests but rejects pods labelled twin=b: a broken promise."""

    name = "PeeksAtLabels"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return Status.unschedulable("twin b") if pod.labels.get("twin") == "b" else None

    def sign_pod(self, pod: Pod) -> Hashable:
        return pod.requests.key()


class SignsNothing(FilterPlugin, SignPlugin):
    name = "SignsNothing"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return None

    def sign_pod(self, pod: Pod) -> Hashable | None:
        return None


def test_a_plugin_reading_beyond_its_signature_fails_the_check() -> None:
    with pytest.raises(AssertionError, match="different verdicts on node small-1"):
        check_signature_promise(PeeksAtLabels(), _pods(), _nodes())


def test_a_check_without_two_pods_of_one_signature_fails() -> None:
    with pytest.raises(AssertionError, match="proves nothing"):
        check_signature_promise(SignsNothing(), _pods(), _nodes())


def test_a_plugin_that_does_not_sign_is_a_type_error() -> None:
    plugin = _from_spec(in_tree_registry()["PodTopologySpread"])(_nodes())
    with pytest.raises(TypeError, match="does not implement SignPlugin"):
        check_signature_promise(plugin, _pods(), _nodes())
