"""Which informer events the daemon forwards to the AutoscaleEnforcer's
authority (``cluster.forwarded``), and which pending pod a new VM wakes
(``cluster.pod_waiting_for``): tables of named cases."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from plugins.autoscale_enforcer.cluster import forwarded, pod_waiting_for
from tests.support.builders import make_node, make_pod, make_vm

Raw = dict[str, Any]


def pending() -> Raw:
    return make_pod("p").label("vm.neon.tech/name", "vm").requests(cpu="1").obj()


def bound() -> Raw:
    return make_pod("p").label("vm.neon.tech/name", "vm").requests(cpu="1").node("n1").obj()


def changed(raw: Raw, path: tuple[str, ...], value: object) -> Raw:
    out = copy.deepcopy(raw)
    target = out
    for key in path[:-1]:
        target = target.setdefault(key, {})
    target[path[-1]] = value
    return out


def node() -> Raw:
    return make_node("n1").allocatable(cpu="8", memory="8Gi").obj()


CASES = [
    ("pods", None, pending(), False, "a pending pod appears"),
    ("pods", None, bound(), True, "a bound pod appears"),
    ("pods", pending(), bound(), True, "a pod is bound"),
    ("pods", pending(), changed(pending(), ("status", "phase"), "Failed"), False, "pending"),
    ("pods", bound(), changed(bound(), ("status", "conditions"), [{}]), False, "status only"),
    ("pods", bound(), changed(bound(), ("status", "phase"), "Succeeded"), True, "turns terminal"),
    ("pods", bound(), changed(bound(), ("metadata", "labels"), {}), True, "loses its VM label"),
    (
        "pods",
        bound(),
        changed(bound(), ("spec", "containers"), [{"name": "c", "resources": {}}]),
        True,
        "resized",
    ),
    ("pods", pending(), None, True, "a pending pod is deleted (it may hold a reservation)"),
    ("pods", bound(), None, True, "a bound pod is deleted"),
    ("nodes", None, node(), True, "a node appears"),
    ("nodes", node(), changed(node(), ("status", "conditions"), [{}]), False, "heartbeat"),
    ("nodes", node(), changed(node(), ("status", "allocatable", "cpu"), "4"), True, "shrinks"),
    ("nodes", node(), None, True, "a node is deleted"),
    ("virtualmachines", None, make_vm("vm").obj(), True, "a VM appears"),
    ("virtualmachines", make_vm("vm").obj(), make_vm("vm").obj(), True, "a VM changes"),
]


@pytest.mark.parametrize(
    ("resource", "old", "new", "expected"),
    [pytest.param(r, o, n, e, id=name) for r, o, n, e, name in CASES],
)
def test_forwarded(resource: str, old: Raw | None, new: Raw | None, expected: bool) -> None:
    assert forwarded(resource, old, new) is expected


def vm_for(pod_name: str | None) -> Raw:
    builder = make_vm("vm")
    return (builder.pod_name(pod_name) if pod_name else builder).obj()


@pytest.mark.parametrize(
    ("vm", "pods", "woken"),
    [
        pytest.param(vm_for("p"), {"default/p": pending()}, True, id="its pending pod"),
        pytest.param(vm_for("p"), {"default/p": bound()}, False, id="its pod is bound"),
        pytest.param(vm_for(None), {"default/p": pending()}, False, id="no podName yet"),
        pytest.param(vm_for("q"), {"default/p": pending()}, False, id="pod unknown"),
        pytest.param(
            vm_for("p"),
            {"default/p": changed(pending(), ("metadata", "labels"), {})},
            False,
            id="pod not labelled with the VM",
        ),
    ],
)
def test_pod_waiting_for(vm: Raw, pods: dict[str, Raw], woken: bool) -> None:
    found = pod_waiting_for(vm, pods.get)
    assert (found is not None) is woken
