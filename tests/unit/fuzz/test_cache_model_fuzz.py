"""Sequences of cache events (node add/update/delete, pod add/update/delete,
assume, bind results, relists) against a simple model: after every step
each node's summed CPU, its visibility, and the pod and assumed counts
agree with the model."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.cache.cache import Cache
from scheduler.framework.objects import Pod, parse_node, parse_pod
from tests.support.builders import make_node, make_pod
from tests.unit.fuzz.strategies import examples

NODES = ["n0", "n1", "n2"]
UIDS = [f"u{i}" for i in range(6)]


def _pod(uid: str, node: str, cpu: int) -> Pod:
    return parse_pod(make_pod(uid).uid(uid).node(node).requests(cpu=f"{cpu}m").obj())


@dataclass
class Model:
    nodes: set[str] = field(default_factory=set)
    pods: dict[str, tuple[str, int]] = field(default_factory=dict)  # uid -> (node, cpu)
    assumed: set[str] = field(default_factory=set)


steps = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "add_node",
                "remove_node",
                "add_pod",
                "remove_pod",
                "assume",
                "bound",
                "failed",
                "relist",
            ]
        ),
        st.sampled_from(NODES),
        st.sampled_from(UIDS),
        st.integers(min_value=0, max_value=2000),
    ),
    max_size=40,
)


def _apply(cache: Cache, model: Model, step: tuple[str, str, str, int]) -> None:
    op, node, uid, cpu = step
    if op == "add_node":
        cache.add_node(parse_node(make_node(node).capacity(cpu="4").obj()))
        model.nodes.add(node)
    elif op == "remove_node":
        cache.remove_node(node)
        model.nodes.discard(node)
    elif op == "add_pod":  # the informer's add or update of an assigned pod
        cache.add_pod(_pod(uid, node, cpu))
        model.pods[uid] = (node, cpu)
        model.assumed.discard(uid)
    elif op == "remove_pod" and uid in model.pods:
        on, had = model.pods.pop(uid)
        cache.remove_pod(_pod(uid, on, had))
        model.assumed.discard(uid)
    elif op == "assume" and uid not in model.pods:
        cache.assume_pod(_pod(uid, node, cpu))
        model.pods[uid] = (node, cpu)
        model.assumed.add(uid)
    elif op == "bound" and uid in model.assumed:  # bind succeeded: the informer confirms
        on, had = model.pods[uid]
        cache.add_pod(_pod(uid, on, had))
        model.assumed.discard(uid)
    elif op == "failed" and uid in model.assumed:  # bind failed: forgotten
        on, had = model.pods.pop(uid)
        cache.forget_pod(_pod(uid, on, had))
        model.assumed.discard(uid)
    elif op == "relist":  # everything delivered again as adds
        for name in sorted(model.nodes):
            cache.add_node(parse_node(make_node(name).capacity(cpu="4").obj()))
        for each, (on, had) in sorted(model.pods.items()):
            if each not in model.assumed:
                cache.add_pod(_pod(each, on, had))


def _agrees(cache: Cache, model: Model) -> None:
    assert cache.pod_count() == len(model.pods)
    assert cache.assumed_count() == len(model.assumed)
    for name in NODES:
        info = cache.node_info(name)
        cpu = sum(c for on, c in model.pods.values() if on == name)
        if name not in model.nodes and not any(on == name for on, _ in model.pods.values()):
            assert info is None, name
            continue
        assert info is not None, name
        assert (info.node is not None) == (name in model.nodes), name
        assert info.requested.milli_cpu == cpu, name


@settings(
    max_examples=examples(100),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(steps)
def test_cache_agrees_with_a_simple_model_after_every_event(
    sequence: list[tuple[str, str, str, int]],
) -> None:
    cache, model = Cache(), Model()
    for step in sequence:
        _apply(cache, model, step)
        _agrees(cache, model)
