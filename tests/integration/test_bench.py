"""The benchmark harness (``bench``): its measuring rules as tables, and the
real thing end to end on a tiny workload with both schedulers.

Nothing here asserts a speed: the end-to-end case checks the report's shape,
that every pod was bound and that no node was overcommitted.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from bench.apirequests import delta, mutating, request_counts, scheduler_writes
from bench.checks import overcommitted_nodes, unbound_pods
from bench.histogram import ATTEMPT_DURATION, histogram
from bench.podwatch import BoundPods
from bench.procstat import cpu_seconds, peak_rss_bytes
from bench.profiles import our_default_profile, same_plugins_profile
from bench.report import METRICS
from bench.schedulers import PROFILE_NAMES, SchedulerKind, config_document
from bench.throughput import ThroughputSampler, percentile, summarize
from bench.workload import PRESETS, node_body, node_name, pod_body
from localcluster import control_plane_binary

ROOT = Path(__file__).resolve().parents[2]
RUN_DEADLINE_SECONDS = 400  # bounds a hung run; four tiny runs need about a minute


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
        "basic500": (500, 500, 2000),
        "small": (100, 100, 500),
        "scale": (15000, 0, 30000),
        "nodeaffinity": (5000, 5000, 1000),
        "topologyspreading": (5000, 5000, 2000),
        "podantiaffinity": (5000, 1000, 1000),
        "dra": (500, 2500, 2500),
        "dra-selector": (500, 2500, 2500),
        "dra-counters": (500, 2500, 2500),
        "churn": (5000, 1000, 6000),
    }


def test_node_affinity_workload_is_scheduler_perfs() -> None:
    workload = PRESETS["nodeaffinity"]
    assert workload.name == "SchedulingNodeAffinity"
    labels = workload.template.node_labels
    node = node_body(node_name(7), labels(7))
    assert node["metadata"]["labels"] == {
        "kubernetes.io/hostname": node_name(7),
        "topology.kubernetes.io/zone": "zone1",
    }
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


# ------------------------------------------------- upstream's configuration
@pytest.mark.integration  # runs the control-plane binary's kube-scheduler
@pytest.mark.parametrize("kind", [SchedulerKind.UPSTREAM, SchedulerKind.UPSTREAM_DEFAULT])
def test_upstream_accepts_the_generated_configuration(tmp_path: Path, kind: SchedulerKind) -> None:
    """kube-scheduler builds its frameworks from the file (plugins and args
    validated) and writes the completed configuration back, without a cluster."""
    kubeconfig = tmp_path / "unused.kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\n"
        "clusters: [{name: x, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: x, user: {token: t}}]\n"
        "contexts: [{name: x, context: {cluster: x, user: x}}]\ncurrent-context: x\n"
    )
    config = tmp_path / "config.yaml"
    config.write_text(config_document(kind, kubeconfig))
    written = tmp_path / "written.yaml"
    done = subprocess.run(
        [
            str(control_plane_binary()),
            "kube-scheduler",
            f"--config={config}",
            f"--write-config-to={written}",
            "--secure-port=0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (profile,) = yaml.safe_load(written.read_text())["profiles"]
    assert profile["schedulerName"] == PROFILE_NAMES[kind]
    if kind is SchedulerKind.UPSTREAM:
        enabled = [entry["name"] for entry in profile["plugins"]["multiPoint"]["enabled"]]
        ours = our_default_profile(PROFILE_NAMES[SchedulerKind.OURS])
        assert enabled == list(same_plugins_profile(ours, "x").plugins)


def test_topology_spreading_workload_is_scheduler_perfs() -> None:
    workload = PRESETS["topologyspreading"]
    assert workload.name == "TopologySpreading"
    labels = workload.template.node_labels
    zones = [labels(i)["topology.kubernetes.io/zone"] for i in range(4)]
    assert zones == ["moon-1", "moon-2", "moon-3", "moon-1"]  # round robin
    assert labels(2)["kubernetes.io/hostname"] == node_name(2)
    init_spec, init_labels = workload.template.init_pod()
    init = pod_body("i", "ns", "pyscheduler", init_spec, labels=init_labels)
    assert "labels" not in init["metadata"]
    assert "topologySpreadConstraints" not in init["spec"]
    template = workload.template
    measured = pod_body("m", "ns", "pyscheduler", template.pod_spec, labels=template.pod_labels)
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
    pod = pod_body("a", "ns", "pyscheduler", init_spec, labels=init_labels)
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
def _bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "bench.run", "--repeat=1", f"--results-dir={tmp_path}", *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        argv,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_DEADLINE_SECONDS,
        check=False,
    )


@pytest.mark.integration  # bench.run starts its own control planes
@pytest.mark.parametrize(
    ("mode", "args"),
    [
        pytest.param("streaming", ["--workload=small", "--init-pods=4"], id="streaming"),
        # The scale preset's path (backlog, no init pods), at a tiny size.
        pytest.param("backlog", ["--workload=scale"], id="backlog"),
    ],
)
def test_tiny_benchmark_binds_every_pod_with_every_scheduler(
    tmp_path: Path, mode: str, args: list[str]
) -> None:
    done = _bench(tmp_path, *args, "--nodes=3", "--pods=12", f"--mode={mode}")
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    report = orjson.loads((tmp_path / f"custom-{mode}.json").read_bytes())
    assert (tmp_path / f"custom-{mode}.md").read_text().startswith("# custom, " + mode)

    assert report["mode"] == mode
    assert report["workload"]["pods"] == 12
    assert report["all_correct"] is True
    assert report["machine"]["cpus"] >= 1
    assert report["commit"]
    runs = {run["scheduler"]: run for run in report["runs"]}
    assert set(runs) == {str(kind) for kind in SchedulerKind}
    assert {run["profile"] for run in runs.values()} == set(PROFILE_NAMES.values())
    for run in runs.values():
        assert run["correct"], run
        assert (run["measured_bound"], run["unbound_pods"]) == (12, 0)
        assert run["peak_rss_bytes"] > 0
        assert run["cpu_seconds"] > 0
        assert run["cpu_ms_per_pod"] is not None
        assert run["progress"][-1][1] == 12
        assert run["apiserver_requests_measured"]["POST pods/binding"] == 12
        assert (run["startup_seconds"] is not None) == (mode == "backlog")
    for name in ("ours", "upstream", "upstream-default"):
        assert runs[name]["attempt_p99_ms"] is not None, name
    assert runs["ceiling"]["attempt_p99_ms"] is None
    assert runs["ceiling"]["scheduler_writes_per_pod"] == 1.0  # binds only
    assert runs["ceiling-events"]["attempt_p99_ms"] is None
    # a bind and an event per pod, the last events counted once the binder
    # settles (a heuristic on its CPU: allow one event of twelve to land late)
    assert 1.9 <= runs["ceiling-events"]["scheduler_writes_per_pod"] <= 2.0
    metric_keys = {metric.key for metric in METRICS}
    assert all(set(spreads) == metric_keys for spreads in report["summary"].values())
    assert set(report["ratios"]) == {
        "ours/upstream",
        "ours/ceiling",
        "upstream/ceiling",
        "ours/ceiling-events",
        "upstream/ceiling-events",
        "ours/upstream-default",
    }
    assert report["ratios"]["ours/ceiling"]["pods_per_second"]["ratio"] > 0
    assert "| metric |" in done.stdout
    assert report["profiled"] is (mode == "backlog")  # the scale preset profiles
    for run in runs.values():
        if run["profile_cpu_seconds"] is not None:  # py-spy / go present
            assert 0 <= run["snapshot_cpu_seconds"] <= run["profile_cpu_seconds"] + 1e-9


@pytest.mark.integration  # bench.run starts its own control planes
@pytest.mark.parametrize("workload", ["dra", "dra-counters"])
def test_tiny_dra_benchmark_binds_every_pod_with_both_schedulers(
    tmp_path: Path, workload: str
) -> None:
    done = _bench(
        tmp_path,
        f"--workload={workload}",
        "--nodes=3",
        "--init-pods=3",
        "--pods=6",
        "--mode=streaming",
        "--schedulers=ours,upstream",
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    report = orjson.loads((tmp_path / "custom-streaming.json").read_bytes())
    sizes = {key: report["workload"][key] for key in ("name", "nodes", "init_pods", "pods")}
    assert sizes == {"name": "custom", "nodes": 3, "init_pods": 3, "pods": 6}
    assert report["all_correct"] is True
    for run in report["runs"]:
        assert (run["measured_bound"], run["unbound_pods"]) == (6, 0), run


@pytest.mark.integration  # bench.run starts its own control planes
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
    done = _bench(
        tmp_path,
        f"--workload={workload}",
        f"--nodes={nodes}",
        f"--init-pods={init_pods}",
        f"--pods={pods}",
        "--mode=streaming",
        "--schedulers=ours,upstream",
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    report = orjson.loads((tmp_path / "custom-streaming.json").read_bytes())
    assert report["workload"]["pod_labels"] == dict(PRESETS[workload].template.pod_labels)
    assert report["all_correct"] is True
    for run in report["runs"]:
        assert (run["measured_bound"], run["unbound_pods"]) == (pods, 0), run


@pytest.mark.integration  # bench.run starts its own control planes
def test_tiny_churn_benchmark_runs_and_deletes_every_pod_with_both_schedulers(
    tmp_path: Path,
) -> None:
    """Every measured pod bound, given its three kubelet status updates and
    deleted (none left), no node overcommitted at any time, and the
    informer events read from both schedulers' metrics."""
    pods = 12
    done = _bench(
        tmp_path,
        "--workload=churn",
        "--nodes=3",
        "--init-pods=3",
        f"--pods={pods}",
        "--rate=20",
        "--schedulers=ours,upstream",
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    report = orjson.loads((tmp_path / "custom-churn.json").read_bytes())
    assert (report["mode"], report["churn"]["rate"]) == ("churn", 20.0)
    assert report["all_correct"] is True
    for run in report["runs"]:
        assert (run["measured_bound"], run["unbound_pods"]) == (pods, 0), run
        assert (run["status_updates"], run["deleted_pods"]) == (3 * pods, pods), run
        requests = run["apiserver_requests_measured"]
        assert requests["DELETE pods"] == pods
        assert requests["PATCH pods/status"] >= 3 * pods
        # a measured pod's add, bind, three status updates and delete reach the
        # informers (at least five of the six as their handlers label them)
        assert run["informer_events_per_pod"] >= 5, run["informer_events"]


@pytest.mark.integration  # bench.autoscale starts its own control plane
def test_tiny_autoscale_benchmark_answers_every_agent_and_writes_its_results(
    tmp_path: Path,
) -> None:
    argv = [
        sys.executable,
        "-m",
        "bench.autoscale",
        "--nodes=3",
        "--vms=4",
        "--rate=50",
        "--storm-seconds=2",
        "--repeat=1",
        f"--results-dir={tmp_path}",
    ]
    done = subprocess.run(
        argv,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=RUN_DEADLINE_SECONDS,
        check=False,
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    report = orjson.loads((tmp_path / "autoscale.json").read_bytes())
    (run,) = report["runs"]
    assert run["codes"] == {"200": run["requests_sent"]}  # every request answered 200
    assert run["requests_sent"] > 0
    assert run["quiet_pods_per_second"] > 0
    assert run["storm_pods_per_second"] > 0
    # CPU is read in clock ticks (10 ms): two quiet pods may cost less than one.
    assert run["quiet_cpu_ms_per_pod"] >= 0
    assert run["storm_agent_process_cpu_ms_per_pod"] >= 0
    assert report["commit"]
    assert report["machine"]["cpus"] >= 1
    assert (tmp_path / "autoscale.md").read_text().startswith("# AutoscaleEnforcer")
    assert "| agent answers by status, all rounds |" in done.stdout
