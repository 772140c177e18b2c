"""The structured allocator, as a table of upstream's scenarios (reference §7.1-7.5).

Fixtures as upstream's allocator tests: node-1 {region-1, earth}, node-2
{region-2, earth}; class-a selects driver-a, class-b driver-b. Expected
results read ``request -> driver/pool/device`` per claim.
"""

from __future__ import annotations

import copy
import itertools
import random
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest

from plugins.dynamicresources.allocator import (
    AllocatedState,
    AllocationError,
    AllocationTimeout,
    Allocator,
    NodeAllocationError,
)
from plugins.dynamicresources.model import parse_claim, parse_class, parse_slice
from plugins.dynamicresources.pools import PoolCache
from tests.support.drabuilders import (
    Obj,
    label_selector,
    make_claim,
    make_class,
    make_device,
    make_slice,
    name_selector,
    request,
)
from tests.unit.plugins.dynamicresources.fakes import steady_cel

NODES = {
    "node-1": {"region": "region-1", "planet": "earth"},
    "node-2": {"region": "region-2", "planet": "earth"},
}
CLASSES = [
    make_class("class-a").driver("driver-a").obj(),
    make_class("class-b").driver("driver-b").obj(),
]
CEL = steady_cel()


@dataclass
class Case:
    claims: list[Obj]
    slices: list[Obj]
    expect: list[list[str]] | None = None
    node: str = "node-1"
    classes: list[Obj] = field(default_factory=lambda: list(CLASSES))
    allocated: tuple[str, ...] = ()
    capacity_in_use: dict[str, dict[str, str]] = field(default_factory=dict)
    error: str = ""
    node_error: bool = False
    selector: Obj | str | None = "unchecked"
    config: list[Obj] | None = None
    check: Any = None  # extra check on the raw results


def device_id(text: str) -> tuple[str, str, str]:
    driver, pool, device = text.split("/")
    return (driver, pool, device)


def run(case: Case) -> list[dict[str, Any]] | None:
    allocated = AllocatedState(
        devices=frozenset(device_id(d) for d in case.allocated),
        capacity={
            device_id(d): {k: Decimal(v) for k, v in caps.items()}
            for d, caps in case.capacity_in_use.items()
        },
    )
    counter = itertools.count()
    allocator = Allocator(
        allocated,
        {c["metadata"]["name"]: parse_class(c) for c in case.classes},
        [parse_slice(s) for s in case.slices],
        CEL,
        new_share_id=lambda: f"share-{next(counter)}",
    )
    return allocator.allocate(case.node, NODES[case.node], [parse_claim(c) for c in case.claims])


def summary(results: list[dict[str, Any]]) -> list[list[str]]:
    return [
        [
            f"{r['request']} -> {r['driver']}/{r['pool']}/{r['device']}"
            for r in result["devices"]["results"]
        ]
        for result in results
    ]


def local(node: str) -> Obj:
    return name_selector(node)


def simple_claim(name: str = "claim-0", device_class: str = "class-a", **options: Any) -> Obj:
    return make_claim(name).request("req-0", device_class, **options).obj()


def slice_with(*devices: Any, name: str = "slice-1", node: str = "node-1", **pool: Any) -> Obj:
    builder = make_slice(name).node(node).device(*devices)
    if pool:
        builder = builder.pool(**pool)
    return builder.obj()


NUMA = "driver-a/numa"
TOLERATE_ALL_NO_EXECUTE = {"key": "k", "operator": "Exists", "effect": "NoExecute"}


def versioned(name: str, version: str, text: str, numa: int = 1, flag: bool = True) -> Any:
    return (
        make_device(name)
        .attr("numa", numa)
        .attr("driverVersion", version, kind="version")
        .attr("stringAttribute", text)
        .attr("boolAttribute", flag)
    )


def partition(name: str, memory: str, **extra: str) -> Any:
    return make_device(name).consumes("counter-set-1", memory=memory, **extra)


CASES = [
    # ------------------------------------------------------------ 7.1 basics
    pytest.param(
        Case(
            [simple_claim()],
            [slice_with("device-1")],
            [["req-0 -> driver-a/pool-1/device-1"]],
            selector=local("node-1"),
        ),
        id="simple",
    ),
    pytest.param(
        Case(
            [simple_claim()],
            [
                make_slice("slice-1").node("node-1").driver("driver-b").device("device-1").obj(),
                make_slice("slice-2").node("node-2").pool("pool-2").device("device-1").obj(),
            ],
            [["req-0 -> driver-a/pool-2/device-1"]],
            node="node-2",
            selector=local("node-2"),
        ),
        id="other-node",
    ),
    pytest.param(
        Case(
            [simple_claim()],
            [
                make_slice("slice-1").node("node-1").driver("driver-b").device("device-1").obj(),
                make_slice("slice-2").node("node-2").pool("pool-2").device("device-1").obj(),
            ],
            None,
        ),
        id="other-node-no-result-on-node-1",
    ),
    pytest.param(
        Case(
            [
                make_claim("claim-0")
                .request(
                    "req-0",
                    selectors=(
                        'device.capacity["driver-a"].memory.compareTo(quantity("1Gi")) >= 0',
                    ),
                )
                .request(
                    "req-1",
                    selectors=(
                        'device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0',
                    ),
                )
                .obj()
            ],
            [
                slice_with(
                    make_device("device-2").capacity("memory", "2Gi"),
                    make_device("device-1").capacity("memory", "1Gi"),
                )
            ],
            [["req-0 -> driver-a/pool-1/device-1", "req-1 -> driver-a/pool-1/device-2"]],
        ),
        id="small-and-large-backtrack-requests",
    ),
    pytest.param(
        Case(
            [
                simple_claim(
                    "claim-0",
                    selectors=(
                        'device.capacity["driver-a"].memory.compareTo(quantity("1Gi")) >= 0',
                    ),
                ),
                simple_claim(
                    "claim-1",
                    selectors=(
                        'device.capacity["driver-a"].memory.compareTo(quantity("2Gi")) >= 0',
                    ),
                ),
            ],
            [
                slice_with(
                    make_device("device-2").capacity("memory", "2Gi"),
                    make_device("device-1").capacity("memory", "1Gi"),
                )
            ],
            [["req-0 -> driver-a/pool-1/device-1"], ["req-0 -> driver-a/pool-1/device-2"]],
        ),
        id="small-and-large-backtrack-claims",
    ),
    pytest.param(
        Case(
            [simple_claim(count=2)],
            [
                slice_with("device-1"),
                make_slice("slice-2").node("node-1").pool("pool-2").device("device-1").obj(),
            ],
            [["req-0 -> driver-a/pool-1/device-1", "req-0 -> driver-a/pool-2/device-1"]],
        ),
        id="devices-split-across-different-slices",
    ),
    pytest.param(
        Case(
            [simple_claim()],
            [
                make_slice("slice-1").node("node-1").pool("pool-1", 1, 2).device("device-1").obj(),
                make_slice("slice-2").node("node-1").pool("pool-1", 2, 2).device("device-2").obj(),
            ],
            None,
        ),
        id="obsolete-slice",
    ),
    pytest.param(
        Case(
            [simple_claim()],
            [
                make_slice("slice-1").node("node-1").pool("pool-1", 1, 2).device("device-1").obj(),
                make_slice("slice-2").node("node-1").pool("pool-1", 1, 2).device("device-1").obj(),
            ],
            node_error=True,
        ),
        id="duplicate-slice",
    ),
    pytest.param(
        Case(
            [simple_claim()],
            [
                make_slice("slice-1").node("node-1").pool("pool-1", 1, 2).device("device-1").obj(),
                make_slice("slice-2").node("node-1").pool("pool-1", 1, 2).device("device-1").obj(),
                make_slice("slice-3").node("node-1").pool("pool-2").device("device-2").obj(),
            ],
            [["req-0 -> driver-a/pool-2/device-2"]],
        ),
        id="invalid-pool-is-ok-if-devices-can-be-allocated-from-other",
    ),
    pytest.param(
        Case(
            [simple_claim()],
            [
                make_slice("slice-1").node("node-1").pool("pool-1", 1, 2).device("device-1").obj(),
                make_slice("slice-2").node("node-1").pool("pool-1", 1, 2).device("device-1").obj(),
                make_slice("slice-3").node("node-1").pool("pool-2").device("device-2").obj(),
            ],
            allocated=("driver-a/pool-2/device-2",),
            node_error=True,
        ),
        id="invalid-pool-and-other-pool-exhausted",
    ),
    pytest.param(
        Case(
            [simple_claim()],
            [make_slice("slice-1").node("node-1").pool("pool-1", 1, 2).device("device-1").obj()],
            None,
        ),
        id="no-allocation-from-incomplete-pools",
    ),
    pytest.param(Case([simple_claim()], [], None), id="no-slices"),
    pytest.param(
        Case(
            [make_claim("claim-0").request("req-0").request("req-1").obj()],
            [slice_with("device-1")],
            None,
        ),
        id="not-enough-suitable-devices",
    ),
    pytest.param(
        Case(
            [simple_claim(device_class="unknown-class")],
            [slice_with("device-1")],
            error="could not retrieve device class unknown-class",
        ),
        id="unknown-class",
    ),
    pytest.param(
        Case(
            [simple_claim(device_class="")],
            [slice_with("device-1")],
            error="claim default/claim-0, request req-0: "
            "missing device class name (unsupported request type?)",
        ),
        id="empty-class",
    ),
    pytest.param(
        Case(
            [simple_claim()],
            [
                make_slice("slice-1")
                .selector(label_selector(region="region-1"))
                .device("device-1")
                .obj()
            ],
            [["req-0 -> driver-a/pool-1/device-1"]],
            selector=label_selector(region="region-1"),
        ),
        id="network-attached-device",
    ),
    pytest.param(
        Case(
            [simple_claim()],
            [
                make_slice("slice-1")
                .selector(label_selector(region="region-1"))
                .device("device-1")
                .obj()
            ],
            None,
            node="node-2",
        ),
        id="network-attached-device-other-node",
    ),
    pytest.param(
        Case(
            [simple_claim(count=4)],
            [
                make_slice("slice-1")
                .pool("pool-1")
                .selector(label_selector(region="region-1"))
                .device("device-1")
                .obj(),
                make_slice("slice-2").pool("pool-2").all_nodes().device("device-1").obj(),
                make_slice("slice-3")
                .pool("pool-3")
                .selector(label_selector(planet="earth"))
                .device("device-1")
                .obj(),
                make_slice("slice-4")
                .pool("pool-4")
                .selector(name_selector("node-1"))
                .device("device-1")
                .obj(),
            ],
            [[f"req-0 -> driver-a/pool-{i}/device-1" for i in range(1, 5)]],
            selector={
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "region", "operator": "In", "values": ["region-1"]},
                            {"key": "planet", "operator": "In", "values": ["earth"]},
                        ],
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["node-1"]}
                        ],
                    }
                ]
            },
        ),
        id="many-network-attached-devices",
    ),
    pytest.param(
        Case(
            [simple_claim(count=2)],
            [
                make_slice("slice-1")
                .pool("pool-1")
                .selector(label_selector(region="region-1"))
                .device("device-1")
                .obj(),
                make_slice("slice-2").pool("pool-2").node("node-1").device("device-1").obj(),
            ],
            [["req-0 -> driver-a/pool-1/device-1", "req-0 -> driver-a/pool-2/device-1"]],
            selector=local("node-1"),
        ),
        id="local-and-network-attached-devices",
    ),
    pytest.param(
        Case(
            [make_claim("claim-0").request("req-0", "class-a").request("req-1", "class-b").obj()],
            [
                slice_with("device-1"),
                make_slice("slice-2").node("node-1").driver("driver-b").device("device-1").obj(),
            ],
            [["req-0 -> driver-a/pool-1/device-1", "req-1 -> driver-b/pool-1/device-1"]],
        ),
        id="several-different-drivers",
    ),
    pytest.param(
        Case(
            [simple_claim()],
            [slice_with("device-1")],
            None,
            allocated=("driver-a/pool-1/device-1",),
        ),
        id="already-allocated-devices",
    ),
    pytest.param(
        Case(
            [simple_claim(mode="All")],
            [
                make_slice("slice-1").node("node-1").pool("pool-1", 1, 2).device("device-1").obj(),
                make_slice("slice-2").node("node-2").pool("pool-1", 1, 2).device("device-2").obj(),
            ],
            [["req-0 -> driver-a/pool-1/device-1"]],
        ),
        id="allocation-mode-all-with-multi-host-resource-pool",
    ),
    pytest.param(
        Case(
            [simple_claim(count=2)],
            [
                make_slice("slice-1").node("node-1").pool("pool-1", 1, 2).device("device-1").obj(),
                make_slice("slice-2").node("node-2").pool("pool-1", 2, 2).device("device-2").obj(),
            ],
            None,
        ),
        id="multi-host-resource-pool-with-stale-slice-for-current-node",
    ),
    pytest.param(
        Case(
            [simple_claim()],
            [
                make_slice("slice-1")
                .per_device()
                .device(
                    make_device("device-2").node("node-2"), make_device("device-1").node("node-1")
                )
                .obj()
            ],
            [["req-0 -> driver-a/pool-1/device-1"]],
            selector=local("node-1"),
        ),
        id="per-device-node-selection",
    ),
    pytest.param(
        Case(
            [simple_claim()],
            [
                make_slice("slice-1")
                .selector(label_selector(planet="earth"))
                .device(make_device("device-1").binds_to_node())
                .obj()
            ],
            [["req-0 -> driver-a/pool-1/device-1"]],
            selector=local("node-1"),
        ),
        id="node-restriction-binds-to-node",
    ),
    # -------------------------------------------------- 7.2 modes and limits
    pytest.param(
        Case(
            [simple_claim(mode="All")],
            [slice_with("device-1")],
            [["req-0 -> driver-a/pool-1/device-1"]],
        ),
        id="all-devices-single",
    ),
    pytest.param(
        Case(
            [simple_claim(mode="All")],
            [slice_with("device-1", "device-2", "device-3")],
            [[f"req-0 -> driver-a/pool-1/device-{i}" for i in (1, 2, 3)]],
        ),
        id="all-devices-many",
    ),
    pytest.param(
        Case(
            [simple_claim(mode="All")],
            [make_slice("slice-1").node("node-1").pool("pool-1", 1, 2).device("device-1").obj()],
            error="claim default/claim-0, request req-0: asks for all devices, "
            "but resource pool driver-a/pool-1 is currently being updated",
        ),
        id="all-devices-of-the-incomplete-pool",
    ),
    pytest.param(
        Case(
            [simple_claim(mode="All")],
            [slice_with("device-1", "device-2")],
            None,
            allocated=("driver-a/pool-1/device-1",),
        ),
        id="all-devices-some-allocated",
    ),
    pytest.param(
        Case(
            [simple_claim("claim-1"), simple_claim("claim-0", mode="All")],
            [slice_with("device-1")],
            None,
        ),
        id="all-devices-no-solution",
    ),
    pytest.param(
        Case(
            [simple_claim("claim-0", mode="All"), simple_claim("claim-1")],
            [slice_with("device-1")],
            None,
        ),
        id="all-devices-no-solution-reversed",
    ),
    pytest.param(
        Case([simple_claim(mode="All")], [make_slice("slice-1").node("node-1").obj()], None),
        id="all-devices-slice-without-devices",
    ),
    pytest.param(
        Case(
            [simple_claim(mode="All", admin=True)],
            [slice_with("device-1", "device-2")],
            [["req-0 -> driver-a/pool-1/device-1", "req-0 -> driver-a/pool-1/device-2"]],
            allocated=("driver-a/pool-1/device-1",),
            check=lambda r: all(x.get("adminAccess") is True for x in r[0]["devices"]["results"]),
        ),
        id="all-devices-some-allocated-admin-access",
    ),
    pytest.param(
        Case(
            [simple_claim(count=2, admin=True)],
            [slice_with("device-1", "device-2")],
            [["req-0 -> driver-a/pool-1/device-1", "req-0 -> driver-a/pool-1/device-2"]],
            allocated=("driver-a/pool-1/device-1",),
        ),
        id="count-devices-some-allocated-admin-access",
    ),
    pytest.param(
        Case(
            [simple_claim("claim-0", admin=True), simple_claim("claim-1", admin=True)],
            [slice_with("device-1", "device-2")],
            [["req-0 -> driver-a/pool-1/device-1"], ["req-0 -> driver-a/pool-1/device-1"]],
        ),
        id="separate-claims-share-device-admin-access",
    ),
    pytest.param(
        Case(
            [simple_claim("claim-0"), simple_claim("claim-1", admin=True)],
            [slice_with("device-1")],
            [["req-0 -> driver-a/pool-1/device-1"], ["req-0 -> driver-a/pool-1/device-1"]],
            check=lambda r: (
                "adminAccess" not in r[0]["devices"]["results"][0]
                and r[1]["devices"]["results"][0]["adminAccess"] is True
            ),
        ),
        id="admin-access-claims-device-allocating-for-non-admin-access",
    ),
    pytest.param(
        Case(
            [
                make_claim("claim-0")
                .request("req-0", admin=True)
                .request("req-1", admin=True, mode="All")
                .obj()
            ],
            [slice_with("device-1")],
            None,
        ),
        id="all-devices-some-allocating-admin-access",
    ),
    pytest.param(
        Case(
            [simple_claim(count=33)],
            [slice_with("device-1")],
            error="claim default/claim-0: "
            "number of requested devices 33 exceeds the claim limit of 32",
        ),
        id="too-many-devices-single-request",
    ),
    pytest.param(
        Case(
            [simple_claim(count=32)],
            [slice_with(*[f"device-{i}" for i in range(32)])],
            [[f"req-0 -> driver-a/pool-1/device-{i}" for i in range(32)]],
        ),
        id="many-devices-okay",
    ),
    pytest.param(
        Case(
            [make_claim("claim-0").request("req-0", count=16).request("req-1", count=17).obj()],
            [slice_with("device-1")],
            error="exceeds the claim limit of 32",
        ),
        id="too-many-devices-total",
    ),
    pytest.param(
        Case(
            [
                make_claim("claim-0")
                .request("req-1", count=2)
                .request("req-2", selectors=('device.attributes["driver-a"].type == "X"',))
                .obj()
            ],
            [
                slice_with(
                    make_device("device-1").attr("type", "X"),
                    make_device("device-2").attr("type", "Y"),
                    make_device("device-3").attr("type", "Y"),
                )
            ],
            [
                [
                    "req-1 -> driver-a/pool-1/device-2",
                    "req-1 -> driver-a/pool-1/device-3",
                    "req-2 -> driver-a/pool-1/device-1",
                ]
            ],
        ),
        id="check-combinations-with-backtracking",
    ),
    # ------------------------------------------------------- 7.3 constraints
    pytest.param(
        Case(
            [
                make_claim("claim-0")
                .request("req-0")
                .request("req-1")
                .match("driver-a/numa")
                .match("driver-a/driverVersion")
                .match("driver-a/stringAttribute")
                .match("driver-a/boolAttribute")
                .obj()
            ],
            [slice_with(versioned("device-1", "1.0.0", "a"), versioned("device-2", "1.0.0", "a"))],
            [["req-0 -> driver-a/pool-1/device-1", "req-1 -> driver-a/pool-1/device-2"]],
        ),
        id="with-constraint",
    ),
    pytest.param(
        Case(
            [make_claim("claim-0").request("req-0").request("req-1").match(NUMA).obj()],
            [
                slice_with(
                    versioned("device-1", "1.0.0", "a", numa=1),
                    versioned("device-2", "1.0.0", "a", numa=2),
                )
            ],
            None,
        ),
        id="with-constraint-int-mismatch",
    ),
    pytest.param(
        Case(
            [
                make_claim("claim-0")
                .request("req-0")
                .request("req-1")
                .match("driver-a/stringAttribute")
                .obj()
            ],
            [slice_with(versioned("device-1", "1.0.0", "a"), versioned("device-2", "1.0.0", "b"))],
            None,
        ),
        id="with-constraint-string-mismatch",
    ),
    pytest.param(
        Case(
            [
                make_claim("claim-0")
                .request("req-0")
                .request("req-1")
                .match("driver-a/boolAttribute")
                .obj()
            ],
            [
                slice_with(
                    versioned("device-1", "1.0.0", "a", flag=True),
                    versioned("device-2", "1.0.0", "a", flag=False),
                )
            ],
            None,
        ),
        id="with-constraint-bool-mismatch",
    ),
    pytest.param(
        Case(
            [
                make_claim("claim-0")
                .request("req-0")
                .request("req-1")
                .match("driver-a/driverVersion")
                .obj()
            ],
            [slice_with(versioned("device-1", "1.0.0", "a"), versioned("device-2", "2.0.0", "a"))],
            None,
        ),
        id="with-constraint-version-mismatch",
    ),
    pytest.param(
        Case(
            [
                make_claim("claim-0")
                .request("req-0")
                .request("req-1")
                .match("driver-a/nonExistent")
                .obj()
            ],
            [slice_with(versioned("device-1", "1.0.0", "a"), versioned("device-2", "1.0.0", "a"))],
            None,
        ),
        id="with-constraint-non-existent-attribute",
    ),
    pytest.param(
        Case(
            [make_claim("claim-0").request("req-0", mode="All").match(NUMA).obj()],
            [
                slice_with(
                    versioned("device-1", "1.0.0", "a", numa=1),
                    versioned("device-2", "1.0.0", "a", numa=2),
                )
            ],
            error="cannot add device driver-a/pool-1/device-2 "
            "because a claim constraint would not be satisfied",
        ),
        id="with-constraint-all-mode-mismatch-is-an-error",
    ),
    pytest.param(
        Case(
            [
                make_claim("claim-0")
                .request("req-0")
                .request("req-1")
                .match("driver-a/driverVersion", "req-0")
                .match("driver-a/stringAttribute")
                .obj()
            ],
            [
                slice_with(
                    versioned("device-1", "1.0.0", "a"),
                    versioned("device-2", "2.0.0", "b"),
                    versioned("device-3", "3.0.0", "b"),
                )
            ],
            [["req-0 -> driver-a/pool-1/device-2", "req-1 -> driver-a/pool-1/device-3"]],
        ),
        id="with-constraint-for-request-retry",
    ),
    pytest.param(
        Case(
            [make_claim("claim-0").request("req-0").request("req-1").distinct(NUMA).obj()],
            [
                slice_with(
                    versioned("device-1", "1.0.0", "a", numa=1),
                    versioned("device-2", "1.0.0", "a", numa=1),
                    versioned("device-3", "1.0.0", "a", numa=2),
                )
            ],
            [["req-0 -> driver-a/pool-1/device-1", "req-1 -> driver-a/pool-1/device-3"]],
        ),
        id="with-distinct-constraint",
    ),
    pytest.param(
        Case(
            [
                make_claim("claim-0")
                .request("req-0")
                .request("req-1")
                .distinct("driver-a/missing")
                .obj()
            ],
            [slice_with("device-1", "device-2")],
            None,
        ),
        id="with-distinct-constraint-missing-attribute",
    ),
    # ----------------------------------------------- 7.4 prioritized, config
    pytest.param(
        Case(
            [
                make_claim("claim-0")
                .first_available(
                    "req-0", request("subReq-0", "class-b"), request("subReq-1", "class-a")
                )
                .obj()
            ],
            [slice_with("device-1")],
            [["req-0/subReq-1 -> driver-a/pool-1/device-1"]],
        ),
        id="prioritized-list-first-unavailable",
    ),
    pytest.param(
        Case(
            [
                make_claim("claim-0")
                .first_available("req-0", request("subReq-0", count=2), request("subReq-1"))
                .obj()
            ],
            [slice_with("device-1")],
            [["req-0/subReq-1 -> driver-a/pool-1/device-1"]],
        ),
        id="prioritized-list-too-many-in-first-subrequest",
    ),
    pytest.param(
        Case(
            [
                make_claim("claim-0")
                .first_available("req-0", request("subReq-0", count=33), request("subReq-1"))
                .obj()
            ],
            [slice_with("device-1")],
            [["req-0/subReq-1 -> driver-a/pool-1/device-1"]],
        ),
        id="prioritized-list-first-exceeds-claim-limit",
    ),
    pytest.param(
        Case(
            [
                make_claim("claim-0")
                .first_available("req-0", request("subReq-0", count=2), request("subReq-1"))
                .request("req-1")
                .obj()
            ],
            [slice_with("device-1", "device-2")],
            [["req-0/subReq-1 -> driver-a/pool-1/device-1", "req-1 -> driver-a/pool-1/device-2"]],
        ),
        id="prioritized-list-with-backtracking",
    ),
    pytest.param(
        Case(
            [
                make_claim("claim-0")
                .first_available(
                    "req-0", request("subReq-0", "class-b"), request("subReq-1", "class-a")
                )
                .obj()
            ],
            [
                slice_with("device-1"),
                make_slice("slice-2").node("node-1").driver("driver-b").device("device-1").obj(),
            ],
            [["req-0/subReq-0 -> driver-b/pool-1/device-1"]],
        ),
        id="prioritized-list-first-available",
    ),
    pytest.param(
        Case(
            [
                make_claim("claim-0")
                .request("req-0")
                .request("req-1", "class-b")
                .config("driver-a", "req-0", mode="fast")
                .config("driver-a", all=True)
                .obj()
            ],
            [
                slice_with("device-1"),
                make_slice("slice-2").node("node-1").driver("driver-b").device("device-1").obj(),
            ],
            [["req-0 -> driver-a/pool-1/device-1", "req-1 -> driver-b/pool-1/device-1"]],
            classes=[
                make_class("class-a").driver("driver-a").config("driver-a", cls="a").obj(),
                make_class("class-b").driver("driver-b").obj(),
            ],
            config=[
                {
                    "source": "FromClass",
                    "requests": ["req-0"],
                    "opaque": {"driver": "driver-a", "parameters": {"cls": "a"}},
                },
                {
                    "source": "FromClaim",
                    "requests": ["req-0"],
                    "opaque": {"driver": "driver-a", "parameters": {"mode": "fast"}},
                },
                {
                    "source": "FromClaim",
                    "opaque": {"driver": "driver-a", "parameters": {"all": True}},
                },
            ],
        ),
        id="with-class-device-config",
    ),
    pytest.param(
        Case(
            [
                make_claim("claim-0")
                .first_available("req-0", request("subReq-0", "class-b"), request("subReq-1"))
                .config("driver-a", "req-0/subReq-0", x=1)
                .config("driver-a", "req-0/subReq-1", x=2)
                .obj()
            ],
            [slice_with("device-1")],
            [["req-0/subReq-1 -> driver-a/pool-1/device-1"]],
            config=[
                {
                    "source": "FromClaim",
                    "requests": ["req-0/subReq-1"],
                    "opaque": {"driver": "driver-a", "parameters": {"x": 2}},
                }
            ],
        ),
        id="prioritized-list-config-only-for-chosen-subrequest",
    ),
    pytest.param(
        Case(
            [make_claim("claim-0").request("req-0").request("req-1").obj()],
            [slice_with("device-1", "device-2")],
            [["req-0 -> driver-a/pool-1/device-1", "req-1 -> driver-a/pool-1/device-2"]],
            classes=[make_class("class-a").driver("driver-a").config("driver-a", cls="a").obj()],
            config=[
                {
                    "source": "FromClass",
                    "requests": ["req-0", "req-1"],
                    "opaque": {"driver": "driver-a", "parameters": {"cls": "a"}},
                }
            ],
        ),
        id="class-config-once-per-class",
    ),
    # ------------------------------------------- 7.5 counters, taints, ...
    pytest.param(
        Case(
            [simple_claim()],
            [
                make_slice("slice-1")
                .node("node-1")
                .pool("pool-1", 1, 2)
                .device(partition("device-1", "4Gi"))
                .obj(),
                make_slice("slice-2")
                .node("node-1")
                .pool("pool-1", 1, 2)
                .counters("counter-set-1", memory="8Gi")
                .obj(),
            ],
            [["req-0 -> driver-a/pool-1/device-1"]],
        ),
        id="partitionable-devices-single-device",
    ),
    pytest.param(
        Case(
            [simple_claim("claim-0"), simple_claim("claim-1")],
            [
                make_slice("slice-1")
                .node("node-1")
                .pool("pool-1", 1, 2)
                .device(partition("device-1", "4Gi"), partition("device-2", "4Gi"))
                .obj(),
                make_slice("slice-2")
                .node("node-1")
                .pool("pool-1", 1, 2)
                .counters("counter-set-1", memory="8Gi")
                .obj(),
            ],
            [["req-0 -> driver-a/pool-1/device-1"], ["req-0 -> driver-a/pool-1/device-2"]],
        ),
        id="partitionable-devices-two-fit",
    ),
    pytest.param(
        Case(
            [simple_claim("claim-0"), simple_claim("claim-1"), simple_claim("claim-2")],
            [
                make_slice("slice-1")
                .node("node-1")
                .pool("pool-1", 1, 2)
                .device(
                    partition("device-1", "4Gi"),
                    partition("device-2", "4Gi"),
                    partition("device-3", "4Gi"),
                )
                .obj(),
                make_slice("slice-2")
                .node("node-1")
                .pool("pool-1", 1, 2)
                .counters("counter-set-1", memory="8Gi")
                .obj(),
            ],
            None,
        ),
        id="partitionable-devices-third-does-not-fit",
    ),
    pytest.param(
        Case(
            [simple_claim()],
            [
                make_slice("slice-1")
                .node("node-1")
                .pool("pool-1", 1, 2)
                .device(partition("device-1", "4Gi"), partition("device-2", "6Gi"))
                .obj(),
                make_slice("slice-2")
                .node("node-1")
                .pool("pool-1", 1, 2)
                .counters("counter-set-1", memory="8Gi")
                .obj(),
            ],
            None,
            allocated=("driver-a/pool-1/device-1",),
        ),
        id="partitionable-devices-counters-consumed-by-allocated",
    ),
    pytest.param(
        Case(
            [simple_claim()],
            [
                make_slice("slice-1")
                .node("node-1")
                .pool("pool-1", 1, 2)
                .device(make_device("device-1").consumes("nope", memory="1Gi"))
                .obj(),
                make_slice("slice-2")
                .node("node-1")
                .pool("pool-1", 1, 2)
                .counters("counter-set-1", memory="8Gi")
                .obj(),
            ],
            node_error=True,
        ),
        id="partitionable-devices-unknown-counter-set-invalid-pool",
    ),
    pytest.param(
        Case(
            [simple_claim(count=7)],
            [
                make_slice("slice-1")
                .node("node-1")
                .pool("pool-1", 1, 2)
                .device(
                    *[
                        make_device(f"device-{i}").consumes(
                            "counter-set-1", **{f"cpu{i}": "1"}, memory="20Gi" if i == 1 else "10Gi"
                        )
                        for i in range(1, 9)
                    ]
                )
                .obj(),
                make_slice("slice-2")
                .node("node-1")
                .pool("pool-1", 1, 2)
                .counters("counter-set-1", memory="70Gi", **{f"cpu{i}": "1" for i in range(1, 9)})
                .obj(),
            ],
            [[f"req-0 -> driver-a/pool-1/device-{i}" for i in range(2, 9)]],
        ),
        id="partitionable-backtracking",
    ),
    pytest.param(
        Case(
            [simple_claim()],
            [
                slice_with(
                    make_device("device-1").taint("k", "NoSchedule"),
                    make_device("device-2").taint("k", "NoExecute"),
                )
            ],
            None,
        ),
        id="tainted-two-devices",
    ),
    pytest.param(
        Case(
            [simple_claim(tolerations=(TOLERATE_ALL_NO_EXECUTE,))],
            [
                slice_with(
                    make_device("device-1").taint("k", "NoSchedule"),
                    make_device("device-2").taint("k", "NoExecute"),
                )
            ],
            [["req-0 -> driver-a/pool-1/device-2"]],
            check=lambda r: (
                r[0]["devices"]["results"][0]["tolerations"] == [TOLERATE_ALL_NO_EXECUTE]
            ),
        ),
        id="tainted-two-devices-tolerated",
    ),
    pytest.param(
        Case(
            [simple_claim()],
            [slice_with(make_device("device-1").taint("k", "None"))],
            [["req-0 -> driver-a/pool-1/device-1"]],
        ),
        id="tainted-no-effect",
    ),
    pytest.param(
        Case(
            [simple_claim(admin=True)],
            [slice_with(make_device("device-1").taint("k", "NoSchedule"))],
            None,
        ),
        id="tainted-admin-access",
    ),
    pytest.param(
        Case(
            [simple_claim()],
            [
                slice_with(
                    make_device("device-1").binding_conditions(["IsPrepared"], ["BindingFailed"])
                )
            ],
            [["req-0 -> driver-a/pool-1/device-1"]],
            check=lambda r: (
                r[0]["devices"]["results"][0]["bindingConditions"] == ["IsPrepared"]
                and r[0]["devices"]["results"][0]["bindingFailureConditions"] == ["BindingFailed"]
            ),
        ),
        id="device-binding-conditions",
    ),
    pytest.param(
        Case(
            [make_claim("claim-0").request("req-0").request("req-1").obj()],
            [
                make_slice("slice-1")
                .node("node-1")
                .pool("pool-0")
                .device(make_device("device-0").binding_conditions(["IsPrepared"], []))
                .obj(),
                make_slice("slice-2").node("node-1").pool("pool-1").device("device-1").obj(),
            ],
            [["req-0 -> driver-a/pool-1/device-1", "req-1 -> driver-a/pool-0/device-0"]],
        ),
        id="binding-conditions-pools-tried-last",
    ),
    pytest.param(
        Case(
            [simple_claim(capacity={"capacity-0": "3"})],
            [
                slice_with(
                    make_device("device-1")
                    .multiple()
                    .capacity(
                        "capacity-0",
                        "4",
                        default="2",
                        validRange={"min": "2", "step": "2", "max": "4"},
                    )
                )
            ],
            [["req-0 -> driver-a/pool-1/device-1"]],
            check=lambda r: (
                r[0]["devices"]["results"][0]["consumedCapacity"] == {"capacity-0": "4"}
                and r[0]["devices"]["results"][0]["shareID"] == "share-0"
            ),
        ),
        id="consumable-capacity-range-rounds-up",
    ),
    pytest.param(
        Case(
            [simple_claim(capacity={"capacity-0": "1.5"})],
            [
                slice_with(
                    make_device("device-1")
                    .multiple()
                    .capacity("capacity-0", "4", default="1", validValues=["1", "2"])
                )
            ],
            [["req-0 -> driver-a/pool-1/device-1"]],
            check=lambda r: (
                r[0]["devices"]["results"][0]["consumedCapacity"] == {"capacity-0": "2"}
            ),
        ),
        id="consumable-capacity-valid-values-round-up",
    ),
    pytest.param(
        Case(
            [simple_claim(capacity={"capacity-0": "6"})],
            [
                slice_with(
                    make_device("device-1")
                    .multiple()
                    .capacity(
                        "capacity-0",
                        "8",
                        default="2",
                        validRange={"min": "2", "step": "2", "max": "4"},
                    )
                )
            ],
            None,
        ),
        id="consumable-capacity-above-max",
    ),
    pytest.param(
        Case(
            [
                simple_claim("claim-0", capacity={"capacity-0": "2"}),
                simple_claim("claim-1", capacity={"capacity-0": "2"}),
            ],
            [slice_with(make_device("device-1").multiple().capacity("capacity-0", "4"))],
            [["req-0 -> driver-a/pool-1/device-1"], ["req-0 -> driver-a/pool-1/device-1"]],
            check=lambda r: (
                r[0]["devices"]["results"][0]["shareID"] != r[1]["devices"]["results"][0]["shareID"]
            ),
        ),
        id="consumable-capacity-two-claims-share-a-device",
    ),
    pytest.param(
        Case(
            [simple_claim(capacity={"capacity-0": "3"})],
            [slice_with(make_device("device-1").multiple().capacity("capacity-0", "4"))],
            None,
            capacity_in_use={"driver-a/pool-1/device-1": {"capacity-0": "2"}},
        ),
        id="consumable-capacity-remainder-too-small",
    ),
    pytest.param(
        Case(
            [simple_claim(capacity={"capacity-0": "8"})],
            [slice_with(make_device("device-1").capacity("capacity-0", "4"))],
            None,
        ),
        id="dedicated-device-capacity-request-too-large",
    ),
    pytest.param(
        Case(
            [simple_claim(capacity={"other": "1"})],
            [slice_with(make_device("device-1").capacity("capacity-0", "4"))],
            None,
        ),
        id="capacity-request-for-unknown-capacity",
    ),
    pytest.param(
        Case(
            [
                make_claim("claim-0")
                .request("req-0", capacity={"bw": "2"})
                .request("req-1", capacity={"bw": "2"})
                .distinct("driver-a/nic")
                .obj()
            ],
            [
                slice_with(
                    make_device("nic-1").multiple().attr("nic", "a").capacity("bw", "10"),
                    make_device("nic-2").multiple().attr("nic", "b").capacity("bw", "10"),
                )
            ],
            [["req-0 -> driver-a/pool-1/nic-1", "req-1 -> driver-a/pool-1/nic-2"]],
        ),
        id="consumable-capacity-distinct-attribute",
    ),
    # ---------------------------------------------------------- CEL errors
    pytest.param(
        Case(
            [simple_claim(selectors=('device.attributes["driver-a"].healthy',))],
            [slice_with("device-1")],
            error="claim default/claim-0, request req-0: selector #0: "
            "CEL runtime error: no such key: healthy "
            '(expression: device.attributes["driver-a"].healthy)',
        ),
        id="cel-runtime-error-in-claim-selector",
    ),
    pytest.param(
        Case(
            [simple_claim()],
            [slice_with("device-1")],
            classes=[make_class("class-a").selector("device.nope(").obj()],
            error="claim default/claim-0, request req-0: class class-a: selector #0: "
            "CEL compile error: compilation failed",
        ),
        id="cel-compile-error-in-class-selector",
    ),
    pytest.param(
        Case(
            [make_claim("claim-0").request("req-0").obj()],
            [slice_with("device-1")],
            classes=[make_class("class-a").selector("device.driver == 'driver-b'").obj()],
            expect=None,
        ),
        id="class-selector-excludes-device",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_allocate(case: Case) -> None:
    if case.error:
        with pytest.raises(AllocationError) as raised:
            run(case)
        assert case.error in str(raised.value)
        assert not isinstance(raised.value, NodeAllocationError)
        return
    if case.node_error:
        with pytest.raises(NodeAllocationError, match="invalid resource pools were encountered"):
            run(case)
        return
    results = run(case)
    if case.expect is None:
        assert results is None
        return
    assert results is not None
    assert summary(results) == case.expect
    if case.selector != "unchecked":
        assert results[0].get("nodeSelector") == case.selector
    if case.config is not None:
        assert results[0]["devices"].get("config", []) == case.config
    if case.check is not None:
        assert case.check(results)


def test_combinations_not_permutations() -> None:
    """5 of 4 identical devices fails after 16 search steps (upstream incubating)."""
    allocator = Allocator(
        AllocatedState(),
        {"class-a": parse_class(CLASSES[0])},
        [parse_slice(slice_with("device-1", "device-2", "device-3", "device-4"))],
        CEL,
    )
    claim = parse_claim(simple_claim(count=5))
    assert allocator.allocate("node-1", NODES["node-1"], [claim]) is None
    assert allocator.invocations == 16


def test_timeout() -> None:
    ticks = itertools.count()
    allocator = Allocator(
        AllocatedState(),
        {"class-a": parse_class(CLASSES[0])},
        [parse_slice(slice_with("device-1"))],
        CEL,
        clock=lambda: float(next(ticks)),
    )
    with pytest.raises(
        AllocationTimeout, match="node node-1: timed out trying to allocate devices"
    ):
        allocator.allocate("node-1", NODES["node-1"], [parse_claim(simple_claim())], deadline=0.5)


def test_inputs_are_not_mutated() -> None:
    claim, slice_ = simple_claim(count=2), slice_with("device-1", "device-2")
    before = copy.deepcopy((claim, slice_))
    case = Case(
        [claim],
        [slice_],
        [["req-0 -> driver-a/pool-1/device-1", "req-0 -> driver-a/pool-1/device-2"]],
    )
    assert run(case) is not None
    assert (claim, slice_) == before


def test_pool_cache_reuses_pools_until_labels_or_slices_change() -> None:
    cache = PoolCache()
    slices = [
        parse_slice(
            make_slice("slice-1")
            .selector(label_selector(region="region-1"))
            .device("device-1")
            .obj()
        )
    ]

    def allocator() -> Allocator:
        classes = {"class-a": parse_class(CLASSES[0])}
        return Allocator(AllocatedState(), classes, slices, CEL, pool_cache=cache)

    claim = parse_claim(simple_claim())
    assert allocator().allocate("node-1", NODES["node-1"], [claim]) is not None
    assert allocator().allocate("node-1", NODES["node-1"], [claim]) is not None
    # the node moved to another region: its pools are recomputed
    assert allocator().allocate("node-1", {"region": "region-2"}, [claim]) is None
    slices.clear()
    cache.invalidate()
    assert allocator().allocate("node-1", NODES["node-1"], [claim]) is None


def test_unsupported_slice_selector_fails_the_search_not_the_results() -> None:
    """A slice node selector with two terms cannot be copied into the
    allocation: ``solve`` (Filter) raises, before any result is built."""
    two_terms = label_selector(region="region-1")
    two_terms["nodeSelectorTerms"].append({"matchExpressions": []})
    slice_ = make_slice("slice-1").selector(two_terms).device("device-1").obj()
    allocator = Allocator(
        AllocatedState(), {"class-a": parse_class(CLASSES[0])}, [parse_slice(slice_)], CEL
    )
    with pytest.raises(AllocationError, match=r"unsupported ResourceSlice\.NodeSelector with 2"):
        allocator.solve("node-1", NODES["node-1"], [parse_claim(simple_claim())])


def test_solution_builds_results_once() -> None:
    allocator = Allocator(
        AllocatedState(),
        {"class-a": parse_class(CLASSES[0])},
        [parse_slice(slice_with("device-1"))],
        CEL,
    )
    solution = allocator.solve("node-1", NODES["node-1"], [parse_claim(simple_claim())])
    assert solution is not None
    results = solution.results()
    assert summary(results) == [["req-0 -> driver-a/pool-1/device-1"]]
    assert results[0]["nodeSelector"] == local("node-1")
    assert solution.results() is results


def test_fully_used_node_is_rejected_without_a_search() -> None:
    allocator = Allocator(
        AllocatedState(devices=frozenset({device_id("driver-a/pool-1/device-1")})),
        {"class-a": parse_class(CLASSES[0])},
        [parse_slice(slice_with("device-1"))],
        CEL,
    )
    assert allocator.allocate("node-1", NODES["node-1"], [parse_claim(simple_claim())]) is None
    assert allocator.invocations == 0


def _random_inputs(rng: random.Random) -> tuple[list[Any], frozenset[Any], list[Any]]:
    slices = []
    for index in range(rng.randint(1, 3)):
        builder = make_slice(f"slice-{index}").pool(f"pool-{index}").node("node-1")
        for position in range(rng.randint(0, 4)):
            device = make_device(f"device-{index}-{position}").attr("n", rng.randint(0, 3))
            if rng.random() < 0.2:
                device = device.taint("k", "NoSchedule", "v")
            if rng.random() < 0.15:
                device = device.multiple()
            if rng.random() < 0.3:
                device = device.capacity("memory", "1Gi")
            builder = builder.device(device)
        slices.append(parse_slice(builder.obj()))
    in_use = frozenset(d.id for s in slices for d in s.devices if rng.random() < 0.4)
    claims = []
    for index in range(rng.randint(1, 2)):
        options: dict[str, Any] = {}
        if rng.random() < 0.3:
            options["count"] = 2
        if rng.random() < 0.1:
            options["admin"] = True
        if rng.random() < 0.3:
            options["selectors"] = ('device.attributes["driver-a"].n % 2 == 1',)
        claims.append(parse_claim(make_claim(f"claim-{index}").request("r", **options).obj()))
    return slices, in_use, claims


def test_shortcuts_give_the_full_search_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shared plan, the quick reject of fully used nodes and the
    first-fit scan answer exactly as the full preparation and search do."""

    def outcome(slices: list[Any], in_use: frozenset[Any], claims: list[Any]) -> Any:
        counter = itertools.count()
        allocator = Allocator(
            AllocatedState(in_use),
            {"class-a": parse_class(CLASSES[0])},
            slices,
            CEL,
            new_share_id=lambda: f"share-{next(counter)}",
        )
        try:
            return allocator.allocate("node-1", NODES["node-1"], claims)
        except AllocationError as error:
            return (type(error).__name__, str(error))

    rng = random.Random(7)
    inputs = [_random_inputs(rng) for _ in range(400)]
    fast = [outcome(*entry) for entry in inputs]
    monkeypatch.setattr(Allocator, "_make_plan", lambda self, claims: None)
    assert [outcome(*entry) for entry in inputs] == fast
    assert sum(1 for result in fast if isinstance(result, list)) > 100
