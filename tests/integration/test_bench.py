"""The benchmark harness (``bench``): its measuring rules as tables, and the
real thing end to end on a tiny workload with both schedulers.

Nothing here asserts a speed: the end-to-end case checks the report's shape,
that every pod was bound and that no node was overcommitted.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from bench.apirequests import delta, mutating, request_counts, scheduler_writes
from bench.checks import overcommitted_nodes, unbound_pods
from bench.histogram import ATTEMPT_DURATION, histogram
from bench.podwatch import BoundPods
from bench.procstat import cpu_seconds, peak_rss_bytes
from bench.report import METRICS
from bench.throughput import ThroughputSampler, percentile, summarize
from bench.workload import PRESETS, node_body, node_name, pod_body

ROOT = Path(__file__).resolve().parents[2]
RUN_DEADLINE_SECONDS = 300  # bounds a hung run; the tiny workload needs ~15 s


# ------------------------------------------------------------ sampling rules
@pytest.mark.parametrize(
    ("ticks", "expected"),
    [
        pytest.param([(1, 0), (2, 0)], [], id="nothing bound yet: no sample"),
        pytest.param([(1, 40)], [], id="first tick with pods is only the baseline"),
        pytest.param([(1, 40), (2, 140), (3, 240)], [100.0, 100.0], id="steady rate"),
        pytest.param(
            [(1, 10), (2, 10), (3, 10), (4, 70)],
            [20.0, 20.0, 20.0],
            id="idle ticks merged: one rate over the real time, once per interval",
        ),
        pytest.param(
            [(1, 10), (2.5, 40)], [20.0], id="rate uses the real timestamps, not the interval"
        ),
        pytest.param([(0.5, 0), (1.5, 5), (2.5, 15)], [10.0], id="zero ticks before start"),
    ],
)
def test_throughput_sampler_follows_scheduler_perf(
    ticks: list[tuple[float, int]], expected: list[float]
) -> None:
    sampler = ThroughputSampler()
    for now, bound in ticks:
        sampler.observe(now, bound)
    assert sampler.samples == pytest.approx(expected)


@pytest.mark.parametrize(
    ("samples", "percent", "expected"),
    [
        pytest.param([5.0], 99, 5.0, id="one sample"),
        pytest.param([1.0, 2.0, 3.0, 4.0], 50, 2.0, id="p50 of four is the second"),
        pytest.param([float(i) for i in range(1, 11)], 90, 9.0, id="p90 of ten is the ninth"),
        pytest.param([float(i) for i in range(1, 11)], 95, 10.0, id="p95 rounds the rank up"),
    ],
)
def test_percentile_is_nearest_rank(samples: list[float], percent: int, expected: float) -> None:
    assert percentile(sorted(samples), percent) == expected


def test_summary_of_no_sample_is_none() -> None:
    assert summarize([]) is None


def test_summary_reports_average_and_percentiles() -> None:
    stats = summarize([30.0, 10.0, 20.0])
    assert stats is not None
    assert (stats.average, stats.p50, stats.p99) == (20.0, 20.0, 30.0)


# ------------------------------------------------------ attempt histograms
def _exposition(counts: dict[str, int], profile: str = "pyscheduler") -> str:
    lines = [f"# TYPE {ATTEMPT_DURATION} histogram"]
    for le, count in counts.items():
        lines.append(
            f'{ATTEMPT_DURATION}_bucket{{le="{le}",profile="{profile}",result="scheduled"}} {count}'
        )
    total = counts["+Inf"]
    lines.append(f'{ATTEMPT_DURATION}_sum{{profile="{profile}",result="scheduled"}} 1')
    lines.append(f'{ATTEMPT_DURATION}_count{{profile="{profile}",result="scheduled"}} {total}')
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("before", "after", "q", "expected"),
    [
        pytest.param(
            {"0.001": 0, "0.002": 0, "+Inf": 0},
            {"0.001": 0, "0.002": 10, "+Inf": 10},
            0.5,
            0.0015,
            id="interpolated inside the bucket",
        ),
        pytest.param(
            {"0.001": 100, "0.002": 100, "+Inf": 100},
            {"0.001": 100, "0.002": 110, "+Inf": 110},
            0.5,
            0.0015,
            id="earlier attempts subtracted",
        ),
        pytest.param(
            {"0.001": 0, "0.002": 0, "+Inf": 0},
            {"0.001": 0, "0.002": 0, "+Inf": 4},
            0.99,
            0.002,
            id="rank in +Inf gives the largest finite bound",
        ),
        pytest.param(
            {"0.001": 0, "0.002": 0, "+Inf": 0},
            {"0.001": 0, "0.002": 0, "+Inf": 0},
            0.5,
            None,
            id="no attempt: no quantile",
        ),
    ],
)
def test_attempt_quantile_over_the_measured_phase(
    before: dict[str, int], after: dict[str, int], q: float, expected: float | None
) -> None:
    labels = {"profile": "pyscheduler", "result": "scheduled"}
    measured = histogram(_exposition(after), ATTEMPT_DURATION, labels).minus(
        histogram(_exposition(before), ATTEMPT_DURATION, labels)
    )
    assert measured.quantile(q) == (None if expected is None else pytest.approx(expected))


def test_histogram_ignores_other_profiles() -> None:
    text = _exposition({"0.001": 5, "+Inf": 5}, profile="other")
    labels = {"profile": "pyscheduler", "result": "scheduled"}
    assert histogram(text, ATTEMPT_DURATION, labels).total == 0


# ------------------------------------------------------- apiserver requests
def _requests(binds: int, events: int, creates: int) -> str:
    common = 'code="201",component="apiserver",group="",scope="resource",version="v1"'
    return "\n".join(
        [
            "# TYPE apiserver_request_total counter",
            f'apiserver_request_total{{{common},resource="pods",subresource="binding",'
            f'verb="POST"}} {binds}',
            f'apiserver_request_total{{{common},resource="events",subresource="",'
            f'verb="POST"}} {events}',
            f'apiserver_request_total{{{common},resource="pods",subresource="",'
            f'verb="POST"}} {creates}',
            f'apiserver_request_total{{{common},resource="pods",subresource="",verb="LIST"}} 7',
        ]
    )


def test_requests_served_between_two_scrapes() -> None:
    served = delta(
        request_counts(_requests(binds=10, events=3, creates=10)),
        request_counts(_requests(binds=30, events=13, creates=30)),
    )
    assert served == {"POST events": 10, "POST pods": 20, "POST pods/binding": 20}
    assert (mutating(served), scheduler_writes(served)) == (50, 30)


# ------------------------------------------------------------------- /proc
def test_cpu_seconds_reads_utime_and_stime_after_the_command_name() -> None:
    fields = ["S", *["0"] * 10, "250", "150", *["0"] * 30]
    stat = f"4242 (py sched (x)) {' '.join(fields)}"
    assert cpu_seconds(stat, ticks_per_second=100) == 4.0


def test_peak_rss_reads_vmhwm_in_kib() -> None:
    status = "Name:\tpython\nVmPeak:\t  999 kB\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n"
    assert peak_rss_bytes(status) == 2048 * 1024


def test_peak_rss_of_this_process_is_positive() -> None:
    status = Path(f"/proc/{os.getpid()}/status").read_text()
    assert peak_rss_bytes(status) > 0


# ---------------------------------------------------------------- checks
def _bound(name: str, node: str, cpu: str = "100m") -> dict[str, Any]:
    pod = pod_body(name, "bench-measured", "pyscheduler")
    pod["spec"]["nodeName"] = node
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
    return pod


@pytest.mark.parametrize(
    ("pods", "overcommitted"),
    [
        pytest.param(
            [_bound("a", "node-00000", "2"), _bound("b", "node-00000", "2")], [], id="fits"
        ),
        pytest.param(
            [_bound("a", "node-00000", "3"), _bound("b", "node-00000", "2")],
            ["node-00000"],
            id="cpu overcommitted",
        ),
        pytest.param(
            [_bound(f"p{i}", "node-00001") for i in range(111)],
            ["node-00001"],
            id="more pods than slots",
        ),
    ],
)
def test_overcommitted_nodes(pods: list[dict[str, Any]], overcommitted: list[str]) -> None:
    nodes = [node_body(node_name(0)), node_body(node_name(1))]
    assert sorted(overcommitted_nodes(nodes, pods)) == overcommitted


def test_unbound_pods_of_a_namespace() -> None:
    waiting = pod_body("w", "bench-measured", "pyscheduler")
    other = pod_body("o", "bench-init", "pyscheduler")
    assert unbound_pods([waiting, other, _bound("b", "node-00000")], "bench-measured") == ["w"]


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        pytest.param([("ADDED", "a", "n1"), ("ADDED", "b", "n1")], 2, id="bound pods counted"),
        pytest.param([("ADDED", "a", "n1"), ("MODIFIED", "a", "n1")], 1, id="once per pod"),
        pytest.param([("ADDED", "a", "")], 0, id="a pod without node is not bound"),
        pytest.param([("ADDED", "a", "n1"), ("DELETED", "a", "n1")], 0, id="deleted"),
    ],
)
def test_bound_pods_counts_each_bound_pod_once(
    events: list[tuple[str, str, str]], expected: int
) -> None:
    bound = BoundPods()
    for kind, name, node in events:
        pod = pod_body(name, "bench-measured", "pyscheduler")
        if node:
            pod["spec"]["nodeName"] = node
        bound.apply(kind, pod)
    assert (bound.count("bench-measured"), bound.count("bench-init")) == (expected, 0)


def test_presets_match_the_documented_sizes() -> None:
    sizes = {key: (w.nodes, w.init_pods, w.pods) for key, w in PRESETS.items()}
    assert sizes == {
        "basic": (5000, 1000, 5000),
        "small": (100, 100, 500),
        "nodeaffinity": (5000, 5000, 1000),
        "topologyspreading": (5000, 5000, 2000),
        "podantiaffinity": (5000, 1000, 1000),
    }


def test_node_affinity_workload_is_scheduler_perfs() -> None:
    workload = PRESETS["nodeaffinity"]
    assert workload.name == "SchedulingNodeAffinity"
    labels = workload.template.node_labels
    node = node_body(node_name(7), labels(7))
    assert node["metadata"]["labels"] == {"topology.kubernetes.io/zone": "zone1"}
    first = pod_body("a", "ns", "pyscheduler", workload.template.pod_spec)
    second = pod_body("b", "ns", "pyscheduler", workload.template.pod_spec)
    required = first["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert required["nodeSelectorTerms"][0]["matchExpressions"] == [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone1", "zone2"]}
    ]
    assert first["spec"]["affinity"] is not second["spec"]["affinity"]  # never shared
    assert workload.resized(pods=10).template is workload.template
    assert "labels" not in node_body(node_name(0))["metadata"]


def test_topology_spreading_workload_is_scheduler_perfs() -> None:
    workload = PRESETS["topologyspreading"]
    assert workload.name == "TopologySpreading"
    labels = workload.template.node_labels
    zones = [labels(i)["topology.kubernetes.io/zone"] for i in range(4)]
    assert zones == ["moon-1", "moon-2", "moon-3", "moon-1"]  # round robin
    assert labels(2)["kubernetes.io/hostname"] == node_name(2)
    init_spec, init_labels = workload.template.init_pod()
    init = pod_body("i", "ns", "pyscheduler", init_spec, init_labels)
    assert "labels" not in init["metadata"]
    assert "topologySpreadConstraints" not in init["spec"]
    spec, pod_labels = workload.template.pod_spec, workload.template.pod_labels
    measured = pod_body("m", "ns", "pyscheduler", spec, pod_labels)
    assert measured["metadata"]["labels"] == {"color": "blue"}
    assert measured["spec"]["topologySpreadConstraints"] == [
        {
            "maxSkew": 5,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"color": "blue"}},
        }
    ]


def test_pod_anti_affinity_workload_is_scheduler_perfs() -> None:
    workload = PRESETS["podantiaffinity"]
    assert workload.name == "SchedulingPodAntiAffinity"
    assert workload.template.node_labels(3) == {"kubernetes.io/hostname": node_name(3)}
    init_spec, init_labels = workload.template.init_pod()
    assert (init_spec, init_labels) == (workload.template.pod_spec, workload.template.pod_labels)
    pod = pod_body("a", "ns", "pyscheduler", init_spec, init_labels)
    assert pod["metadata"]["labels"] == {"color": "green"}
    (term,) = pod["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert term == {
        "labelSelector": {"matchLabels": {"color": "green"}},
        "topologyKey": "kubernetes.io/hostname",
        "namespaces": ["bench-measured", "bench-init"],
    }
    assert workload.to_json()["pod_labels"] == {"color": "green"}


# -------------------------------------------------------------- end to end
@pytest.mark.integration  # bench.run starts its own control plane
def test_tiny_benchmark_binds_every_pod_with_both_schedulers(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    argv = [
        sys.executable,
        "-m",
        "bench.run",
        "--nodes=5",
        "--init-pods=5",
        "--pods=20",
        "--schedulers=ours,upstream",
        f"--out={out}",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        argv,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_DEADLINE_SECONDS,
        check=False,
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    report = orjson.loads(out.read_bytes())

    assert report["workload"] == {
        "name": "custom",
        "nodes": 5,
        "init_pods": 5,
        "pods": 20,
        "pod_spec": {},
    }
    assert report["all_correct"] is True
    runs = {run["scheduler"]: run for run in report["runs"]}
    assert set(runs) == {"ours", "upstream"}
    assert {run["profile"] for run in runs.values()} == {"pyscheduler", "default-scheduler"}
    for run in runs.values():
        assert run["correct"], run
        assert (run["measured_bound"], run["unbound_pods"]) == (20, 0)
        assert run["completed"] is True
        assert run["overcommitted_nodes"] == {}
        assert run["cpu_seconds"] > 0
        assert run["peak_rss_bytes"] > 0
        assert run["wall_seconds"] > 0
        assert {"nodes", "scheduler_ready", "init_pods", "measured"} <= set(run["phase_seconds"])
        # A run this short may end before the first full 1 s sample.
        assert run["throughput"] is None or set(run["throughput"]) >= {"average", "p50", "p99"}

    metric_keys = {metric.key for metric in METRICS}
    assert set(report["summary"]) == {"ours", "upstream"}
    assert all(set(means) == metric_keys for means in report["summary"].values())
    assert set(report["ratios"]) == metric_keys
    assert report["ratios"]["pods_per_second"] > 0
    for run in runs.values():
        assert run["apiserver_requests_measured"]["POST pods/binding"] == 20
        assert run["scheduler_writes_per_pod"] >= 1
    assert math.isfinite(report["ratios"]["peak_rss_mib"])
    assert "ours/upstream" in done.stdout


@pytest.mark.integration  # bench.run starts its own control plane
@pytest.mark.parametrize(
    ("workload", "nodes", "init_pods", "pods"),
    [
        pytest.param("topologyspreading", 5, 10, 10, id="TopologySpreading 5Nodes"),
        pytest.param("podantiaffinity", 5, 1, 4, id="SchedulingPodAntiAffinity 5Nodes"),
    ],
)
def test_tiny_interpod_workloads_bind_every_pod_with_both_schedulers(
    tmp_path: Path, workload: str, nodes: int, init_pods: int, pods: int
) -> None:
    """scheduler_perf's 5Nodes sizes: every pod bound, no node overcommitted,
    by both schedulers (the anti-affinity one fills each node with one pod)."""
    out = tmp_path / "report.json"
    argv = [
        sys.executable,
        "-m",
        "bench.run",
        f"--workload={workload}",
        f"--nodes={nodes}",
        f"--init-pods={init_pods}",
        f"--pods={pods}",
        "--schedulers=ours,upstream",
        f"--out={out}",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        argv,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_DEADLINE_SECONDS,
        check=False,
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    report = orjson.loads(out.read_bytes())
    assert report["workload"]["pod_labels"] == dict(PRESETS[workload].template.pod_labels)
    assert report["all_correct"] is True
    for run in report["runs"]:
        assert (run["measured_bound"], run["unbound_pods"]) == (pods, 0), run
        assert run["overcommitted_nodes"] == {}
