"""The structured allocator's cost per pod at scheduler_perf's DRA size.

500 nodes x 10 devices (one ResourceSlice per node, attributes and capacity
as upstream's ``createResourceDriver``), one claim with one request, with 0%,
50% and ~100% of the devices in use; a plain request and one with upstream's
``selector_*`` CEL selector. Each pod = one ``Allocator`` and one
``solve`` per node (the Filter of every node), with warm caches (pools
per node, CEL results per device), as in steady state. Run:

    PYTHONPATH=. .venv/bin/python hack/dra_allocator_cost.py

The figures are recorded in ARCHITECTURE.md.
"""

from __future__ import annotations

import time

from plugins.dynamicresources.allocator import AllocatedState, Allocator
from plugins.dynamicresources.cel import CelEnvironment
from plugins.dynamicresources.model import parse_claim, parse_class, parse_slice
from plugins.dynamicresources.pools import PoolCache
from tests.support.drabuilders import make_claim, make_class, make_device, make_slice

DRIVER = "test-driver.cdi.k8s.io"
NODES, DEVICES, REPEAT = 500, 10, 5
SELECTOR = (
    f'device.attributes["{DRIVER}"].driverVersion.major() >= 1 && '
    f'device.capacity["{DRIVER}"].memory.isGreaterThan(quantity("1Mi"))'
)


def main() -> None:
    slices = []
    for n in range(NODES):
        builder = make_slice(f"s-{n}").driver(DRIVER).pool(f"node-{n}").node(f"node-{n}")
        for d in range(DEVICES):
            builder = builder.device(
                make_device(f"instance-{d}")
                .attr("model", "A100")
                .attr("family", "GPU")
                .attr("driverVersion", "1.2.3", kind="version")
                .attr("dra.example.com/numa", d % 2)
                .capacity("memory", "1Gi")
            )
        slices.append(parse_slice(builder.obj()))
    cel, pools = CelEnvironment(), PoolCache()
    classes = {"test-class": parse_class(make_class("test-class").driver(DRIVER).obj())}
    for label, selectors in (("plain", ()), ("selector", (SELECTOR,))):
        claims = [  # one list for every node, as the plugin's Filter passes it
            parse_claim(make_claim("c").request("req-0", "test-class", selectors=selectors).obj())
        ]
        for used in (0.0, 0.5, 0.999):
            devices = frozenset(
                (DRIVER, f"node-{n}", f"instance-{d}")
                for n in range(NODES)
                for d in range(DEVICES)
                if n * DEVICES + d < used * NODES * DEVICES
            )
            best = float("inf")  # the least disturbed round (the machine is shared)
            for round_ in range(REPEAT + 1):  # the first round warms the caches
                started = time.process_time()
                allocator = Allocator(
                    AllocatedState(devices), classes, slices, cel, pool_cache=pools
                )
                feasible = sum(1 for n in range(NODES) if allocator.solve(f"node-{n}", {}, claims))
                if round_:
                    best = min(best, time.process_time() - started)
            elapsed = best
            print(
                f"{label:8s} {used:5.0%} in use: {elapsed * 1e3:6.1f} ms/pod "
                f"({elapsed / NODES * 1e6:4.0f} us/node), {feasible} feasible nodes"
            )


if __name__ == "__main__":
    main()
