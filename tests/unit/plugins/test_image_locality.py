"""ImageLocality: image sizes on the node, scaled by how widely each image is spread."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import pytest

from plugins.image_locality import (
    MAX_CONTAINER_THRESHOLD,
    MIN_THRESHOLD,
    NAME,
    ImageIndex,
    ImageLocality,
    calculate_priority,
)
from plugins.image_locality.plugin import new
from scheduler.framework import CycleState, Handle, NodeInfo
from scheduler.framework.objects import normalized_image_name
from tests.support.builders import make_node, make_pod
from tests.unit.plugins.support import Obj, node_info, pod

MIB = 1024 * 1024
Handler = Callable[[Any, Any], None]


class FakeInformers:
    def __init__(self) -> None:
        self.handlers: dict[str, Handler] = {}

    def on_change(self, resource: str, handler: Handler) -> None:
        self.handlers[resource] = handler


class FakeSnapshot:
    def __init__(self, infos: Sequence[NodeInfo]) -> None:
        self.infos = infos

    def node_infos(self) -> Sequence[NodeInfo]:
        return self.infos


class FakeHandle:
    def __init__(self) -> None:
        self.informers = FakeInformers()
        self.current = FakeSnapshot([])

    def snapshot(self) -> FakeSnapshot:
        return self.current


def cluster(*nodes: Obj) -> tuple[ImageLocality, FakeHandle, list[NodeInfo]]:
    """The plugin fed with these nodes through the node informer, and their NodeInfos."""
    handle = FakeHandle()
    plugin = new(None, cast(Handle, handle))
    for raw in nodes:
        handle.informers.handlers["nodes"](None, raw)
    infos = [node_info(raw) for raw in nodes]
    handle.current = FakeSnapshot(infos)
    return plugin, handle, infos


N0 = make_node("n0").image(250 * MIB, "a:latest", "registry/a@sha256:1").obj()
N1 = make_node("n1").image(250 * MIB, "a:latest").image(500 * MIB, "b:v1").obj()
N2 = make_node("n2").obj()


def test_score_spread_scaled() -> None:
    # a:latest on 2 of 3 nodes: int(250 MiB * 2/3) = 174762666; b:v1 on 1 of 3:
    # int(500 MiB / 3) = 174762666. Two containers: range 23 MiB .. 2000 MiB.
    # n0: 100 * (174762666 - 24117248) / 2073034752 = 7
    # n1: 100 * (349525332 - 24117248) / 2073034752 = 15
    plugin, _, infos = cluster(N0, N1, N2)
    raw = make_pod("p").image("a").obj()
    raw["spec"]["containers"].append({"name": "second", "image": "b:v1"})
    the_pod = pod(raw)
    scores = [plugin.score(CycleState(), the_pod, info) for info in infos]
    assert scores == [(7, None), (15, None), (0, None)]


def test_one_container_big_image_everywhere() -> None:
    # 800 MiB on every node: full size counts; 100 * (800 - 23) / (1000 - 23) = 79
    nodes = [make_node(f"n{i}").image(800 * MIB, "big:1").obj() for i in range(2)]
    plugin, _, infos = cluster(*nodes)
    the_pod = pod(make_pod("p").image("big:1").obj())
    assert [plugin.score(CycleState(), the_pod, info)[0] for info in infos] == [79, 79]


def test_small_image_scores_zero() -> None:
    plugin, _, infos = cluster(make_node("n").image(10 * MIB, "tiny:1").obj())
    the_pod = pod(make_pod("p").image("tiny:1").obj())
    assert plugin.score(CycleState(), the_pod, infos[0]) == (0, None)


def test_init_containers_and_repeats_count() -> None:
    node = make_node("n").image(600 * MIB, "x:1").obj()
    plugin, _, infos = cluster(node)
    raw = make_pod("p").image("x:1").obj()
    raw["spec"]["initContainers"] = [{"name": "init", "image": "x:1"}]
    # 2 x 600 MiB over 2 containers: 100 * (1200 - 23) / (2000 - 23) = 59
    assert plugin.score(CycleState(), pod(raw), infos[0]) == (59, None)


@pytest.mark.parametrize(
    ("name", "normalized"),
    [
        pytest.param("nginx", "nginx:latest", id="no tag"),
        pytest.param("nginx:1.25", "nginx:1.25", id="tag"),
        pytest.param("localhost:5000/nginx", "localhost:5000/nginx:latest", id="registry port"),
        pytest.param("reg/nginx@sha256:ab", "reg/nginx@sha256:ab", id="digest"),
    ],
)
def test_normalized_image_name(name: str, normalized: str) -> None:
    assert normalized_image_name(name) == normalized


@pytest.mark.parametrize(
    ("total", "containers", "expected"),
    [
        pytest.param(0, 1, 0, id="below the minimum"),
        pytest.param(MIN_THRESHOLD, 1, 0, id="at the minimum"),
        pytest.param(MAX_CONTAINER_THRESHOLD, 1, 100, id="at the maximum"),
        pytest.param(5 * MAX_CONTAINER_THRESHOLD, 2, 100, id="clamped to the maximum"),
    ],
)
def test_calculate_priority(total: int, containers: int, expected: int) -> None:
    assert calculate_priority(total, containers) == expected


def test_index_follows_node_changes() -> None:
    index = ImageIndex()
    first = make_node("n0").image(100, "a").obj()
    index.on_node_change(None, first)
    index.on_node_change(None, make_node("n1").image(999, "a").obj())
    assert (index.count("a"), index.size("a")) == (2, 100)  # the first size stays
    index.on_node_change(first, make_node("n0").image(5, "b").obj())
    assert (index.count("a"), index.count("b"), len(index)) == (1, 1, 2)
    index.on_node_change(make_node("n1").image(999, "a").obj(), None)
    assert (index.count("a"), index.size("a"), len(index)) == (0, 0, 1)


def test_signature_changes_with_the_spread() -> None:
    plugin, handle, _ = cluster(N0, N2)
    the_pod = pod(make_pod("p").image("a").obj())
    before = plugin.sign_pod(the_pod)
    handle.informers.handlers["nodes"](N2, make_node("n2").image(250 * MIB, "a:latest").obj())
    assert plugin.sign_pod(the_pod) != before
    hash(before)


def test_name() -> None:
    assert ImageLocality.name == NAME == "ImageLocality"
