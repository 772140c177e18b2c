"""The benchmark's pure parts: the same-plugins profile derived from ours,
spreads and ratios, result files, and docs/benchmarks.md quoting the
committed results (never figures typed by hand)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from bench.cpuprofile import parse_collapsed, parse_pprof_top
from bench.podwatch import BoundPods
from bench.procstat import wait_until_idle
from bench.profiles import (
    UPSTREAM_PLUGINS,
    enabled_plugins,
    our_default_profile,
    same_plugins_profile,
)
from bench.publish import (
    BENCHMARKS_DOC,
    RESULTS_BEGIN,
    RESULTS_DIR,
    RESULTS_END,
    link_base,
    markdown,
    results_section,
    with_section,
    write,
)
from bench.report import NO_DIFFERENCE, Spread, document, ratio
from bench.results import MAX_PROGRESS_POINTS, RunResult, progress_points
from bench.run import _command
from bench.schedulers import BENCH_FLAGS_ENV, extra_flags
from bench.workload import PRESETS, Mode, Workload, pod_body
from scheduler.framework.interfaces import ExtensionPoint


# ------------------------------------------------------------ same plugins
def test_upstream_runs_exactly_our_enabled_plugins_with_our_weights() -> None:
    ours = our_default_profile("pyscheduler")
    same = same_plugins_profile(ours, "upstream-same")
    multi = same.profile["plugins"]["multiPoint"]
    assert multi["disabled"] == [{"name": "*"}]
    names = [entry["name"] for entry in multi["enabled"]]
    ours_names = [choice.name for choice in enabled_plugins(ours)]
    assert names == [name for name in ours_names if name in UPSTREAM_PLUGINS]
    assert set(same.ours_only) == set(ours_names) - UPSTREAM_PLUGINS
    scored = {ref.name: ref.weight for ref in ours.plugins[ExtensionPoint.SCORE]}
    weights = {entry["name"]: entry.get("weight", 0) for entry in multi["enabled"]}
    assert {name: weights[name] for name in scored if name in weights} == {
        name: weight for name, weight in scored.items() if name in weights
    }
    assert all(weights[name] == 0 for name in weights if name not in scored)
    assert same.profile["schedulerName"] == "upstream-same"


def test_upstream_gets_our_plugin_args_in_upstream_spelling() -> None:
    same = same_plugins_profile(our_default_profile("pyscheduler"), "upstream-same")
    args = {entry["name"]: entry["args"] for entry in same.profile.get("pluginConfig", [])}
    fit = args["NodeResourcesFit"]
    assert fit["scoringStrategy"]["type"] == "LeastAllocated"
    assert "ignoredResources" in fit  # camelCase, as upstream decodes it
    assert all(value is not None for value in fit.values())


# ---------------------------------------------------------------- watch
def test_bind_times_are_recorded_once_per_pod_in_order() -> None:
    bound = BoundPods()
    for now, name in [(1.0, "a"), (2.0, "b"), (3.0, "a")]:
        pod = pod_body(name, "bench-measured", "x", node="n1")
        bound.apply("MODIFIED", pod, now)
    assert bound.bind_times("bench-measured") == [1.0, 2.0]


def test_backlog_init_pods_are_created_bound() -> None:
    assert pod_body("i", "ns", "x", node="node-00001")["spec"]["nodeName"] == "node-00001"
    assert "nodeName" not in pod_body("p", "ns", "x")["spec"]


@pytest.mark.parametrize("count", [1, 7, MAX_PROGRESS_POINTS, 3 * MAX_PROGRESS_POINTS + 1])
def test_progress_is_thinned_and_keeps_the_last_bind(count: int) -> None:
    times = [10.0 + i for i in range(count)]
    points = progress_points(times, 10.0)
    assert points[0] == (0.0, 1)
    assert points[-1] == (count - 1.0, count)
    assert len(points) <= MAX_PROGRESS_POINTS + 1


def test_scale_preset_is_backlog_only_at_full_size() -> None:
    scale = PRESETS["scale"]
    assert (scale.nodes, scale.pods, scale.modes) == (15000, 30000, (Mode.BACKLOG,))
    assert PRESETS["basic"].modes == (Mode.STREAMING, Mode.BACKLOG)


# ------------------------------------------------------------- spreads
@pytest.mark.parametrize(
    ("mine", "theirs", "expected", "no_difference"),
    [
        pytest.param(Spread(90, 100, 110), Spread(40, 50, 60), 2.0, False, id="apart"),
        pytest.param(Spread(90, 100, 110), Spread(105, 120, 130), 100 / 120, True, id="overlap"),
        pytest.param(Spread(5, 5, 5), Spread(5, 5, 5), 1.0, True, id="equal"),
    ],
)
def test_ratio_of_medians_marks_overlapping_ranges(
    mine: Spread, theirs: Spread, expected: float, no_difference: bool
) -> None:
    found = ratio(mine, theirs)
    assert found is not None
    assert found.value == pytest.approx(expected)
    assert found.no_difference is no_difference
    assert found.low <= found.value <= found.high


def test_no_ratio_without_a_figure() -> None:
    assert ratio(None, Spread(1, 1, 1)) is None
    assert ratio(Spread(1, 1, 1), Spread(0, 0, 0)) is None


def _run(scheduler: str, round_index: int, rate: float, cpu: float) -> RunResult:
    return RunResult(
        scheduler=scheduler,
        profile=scheduler,
        mode="backlog",
        round_index=round_index,
        workload=Workload("w", nodes=2, init_pods=0, pods=100),
        throughput=None,
        pods_per_second=rate,
        wall_seconds=100 / rate,
        measured_bound=100,
        completed=True,
        cpu_seconds=cpu * 2,
        cpu_seconds_measured=cpu,
        peak_rss_bytes=2**27,
        control_plane_cpu_seconds_measured=1.0,
        bench_cpu_seconds_measured=0.1,
        scheduler_writes_per_pod=1.0,
        apiserver_requests_measured={"POST pods/binding": 100},
        attempt_p50_ms=None,
        attempt_p99_ms=None,
        unbound_pods=0,
        overcommitted_nodes={},
        progress=((0.0, 1), (1.0, 100)),
    )


def _doc() -> dict[str, Any]:
    runs = [
        _run(name, i, rate + i, cpu)
        for i in range(3)
        for name, rate, cpu in [
            ("ours", 100.0, 0.5),
            ("upstream", 101.0, 0.2),
            ("ceiling", 300.0, 0.1),
            ("ceiling-events", 250.0, 0.15),
        ]
    ]
    context = {
        "preset": "custom",
        "mode": "backlog",
        "workload": {"name": "w", "nodes": 2, "init_pods": 0, "pods": 100},
        "repeat": 3,
        "machine": {"cpus": 2, "platform": "linux", "python": "3.11"},
        "commit": "abc",
        "started": "now",
        "client_qps": 5000,
        "creators": 30,
        "command": "python -m bench.run",
        "same_plugins": {"plugins": ["PrioritySort"], "ours_only": []},
    }
    return orjson.loads(orjson.dumps(document(runs, context)))


def test_document_gives_spreads_and_ratios_with_verdicts() -> None:
    doc = _doc()
    assert doc["summary"]["ours"]["pods_per_second"] == {
        "min": 100.0,
        "median": 101.0,
        "max": 102.0,
    }
    assert doc["summary"]["ours"]["cpu_ms_per_pod"]["median"] == pytest.approx(5.0)
    assert doc["ratios"]["ours/upstream"]["pods_per_second"]["verdict"] == NO_DIFFERENCE
    assert doc["ratios"]["ours/ceiling"]["pods_per_second"]["verdict"] == "different"
    assert doc["ratios"]["ours/ceiling-events"]["pods_per_second"]["ratio"] == pytest.approx(
        101.0 / 251.0
    )
    assert set(doc["ratios"]) == {
        "ours/upstream",
        "ours/ceiling",
        "upstream/ceiling",
        "ours/ceiling-events",
        "upstream/ceiling-events",
    }
    assert doc["summary"]["ours"]["attempt_p50_ms"] is None
    assert doc["all_correct"] is True


def test_result_files_and_markdown(tmp_path: Path) -> None:
    doc = _doc()
    names = {path.name for path in write(doc, tmp_path, "custom-backlog")}
    assert {"custom-backlog.json", "custom-backlog.md"} <= names
    text = (tmp_path / "custom-backlog.md").read_text()
    assert "2 cores" in text
    assert "`abc`" in text
    assert f"0.99 ({NO_DIFFERENCE})" in text  # ours/upstream pods/s
    assert "round 3 ceiling" in text
    assert markdown(doc, None).count("| metric |") == 2


def test_the_plot_is_written_with_matplotlib(tmp_path: Path) -> None:
    write(_doc(), tmp_path, "custom-backlog")
    assert (tmp_path / "custom-backlog.png").read_bytes()[:4] == b"\x89PNG"


def test_results_section_quotes_the_files(tmp_path: Path) -> None:
    doc = _doc()
    (tmp_path / "basic-backlog.json").write_bytes(orjson.dumps(doc))
    section = results_section(tmp_path)
    assert "### w, backlog" in section
    assert "| rate, measured pods / clock (pods/s) | 101.0 [100.0-102.0]" in section
    document = f"a\n{RESULTS_BEGIN}\nold\n{RESULTS_END}\nz"
    replaced = with_section(document, section)
    assert "old" not in replaced
    assert replaced.startswith(f"a\n{RESULTS_BEGIN}\n### w")
    assert replaced.endswith(f"{RESULTS_END}\nz")


def test_a_document_without_the_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="lacks the markers"):
        with_section("# Benchmarks\n", "### w")


def test_the_committed_results_are_linked_from_the_documents_folder() -> None:
    assert link_base(RESULTS_DIR) == "../bench/results"
    assert "(../bench/results/basic-backlog.md)" in results_section()


def test_benchmarks_doc_quotes_the_committed_results() -> None:
    """Fails when bench/results/ changed and `python -m bench.publish` was not run."""
    text = BENCHMARKS_DOC.read_text()
    assert with_section(text, results_section()) == text


# ------------------------------------------------------------- profiles
def test_collapsed_stacks_give_cpu_snapshot_share_and_own_time() -> None:
    lines = [
        "run (app.py:1);cycle (scheduler.py:9);update_snapshot (cache.py:170) 30",
        "run (app.py:1);cycle (scheduler.py:9);filter (algorithm.py:5) 50",
        "run (app.py:1);bind (binding.py:3) 20",
        "garbage",
    ]
    profile = parse_collapsed(lines, rate=100)
    assert profile.total_seconds == pytest.approx(1.0)
    assert profile.snapshot_seconds == pytest.approx(0.3)
    assert profile.top[0] == ("filter (algorithm.py:5)", pytest.approx(0.5))
    assert profile.snapshot_share == pytest.approx(0.3)
    assert profile.top_shares[0] == ("filter (algorithm.py:5)", pytest.approx(0.5))
    assert profile.cumulative_shares[0] == ("cycle (scheduler.py)", pytest.approx(0.8))
    assert "run (app.py)" not in dict(profile.cumulative_shares)  # under every sample


GO_TOP = """File: kcp
Type: cpu
Duration: 2s, Total samples = 470ms (23.50%)
Showing nodes accounting for 270ms, 57.45% of 1.50s total
Showing top 12 nodes out of 250
      flat  flat%   sum%        cum   cum%
      40ms  8.51%  8.51%       40ms  8.51%  runtime.memmove
      30ms  6.38% 14.89%      120ms 25.53%  cache.(*cacheImpl).UpdateSnapshot
         0     0% 14.89%       10ms  2.13%  runtime.main
"""


def test_pprof_top_gives_totals_and_flat_rows() -> None:
    shown, total, rows = parse_pprof_top(GO_TOP)
    assert (shown, total) == (pytest.approx(0.27), pytest.approx(1.5))
    assert rows[0] == ("runtime.memmove", pytest.approx(0.04))
    assert rows[1][0].endswith("(*cacheImpl).UpdateSnapshot")
    assert len(rows) == 2  # a row with no own time is not a hot spot
    _, _, cumulative = parse_pprof_top(GO_TOP, cumulative=True)
    assert cumulative[1] == ("cache.(*cacheImpl).UpdateSnapshot", pytest.approx(0.12))
    assert cumulative[2] == ("runtime.main", pytest.approx(0.01))


def test_no_samples_under_the_focus_reads_as_zero() -> None:
    assert parse_pprof_top("Showing nodes accounting for 0, 0% of 470ms total\n")[0] == 0.0


@pytest.mark.parametrize(
    ("cpu_readings", "waited"),
    [
        pytest.param([1.0, 1.0, 1.0], 0.2, id="idle at once: two quiet intervals"),
        pytest.param([1.0, 1.005, 1.01], 0.2, id="a tick within the idle share"),
        pytest.param([1.0, 1.0, 1.08, 1.08, 1.08], 0.4, id="quiet, busy, then quiet twice"),
        pytest.param([1.0, 1.08, 1.16, 1.165, 1.165], 0.4, id="busy twice, then quiet twice"),
        pytest.param([float(i) for i in range(200)], 1.0, id="never idle: up to the limit"),
    ],
)
async def test_settling_waits_until_the_process_is_idle(
    cpu_readings: list[float], waited: float
) -> None:
    readings = iter(cpu_readings)
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    result = await wait_until_idle(lambda: next(readings), limit=1.0, sleep=sleep)

    assert result == pytest.approx(waited)
    assert sum(slept) == pytest.approx(waited)


@pytest.mark.parametrize(
    ("flags", "command"),
    [
        ("", "python -m bench.run --workload basic"),
        (
            "--max-concurrent-binds=32  --v=2",
            "PYSCHEDULER_BENCH_FLAGS='--max-concurrent-binds=32 --v=2' "
            "python -m bench.run --workload basic",
        ),
    ],
    ids=["no extra flags", "extra flags for ours, named in the command"],
)
def test_extra_daemon_flags_reach_ours_and_the_recorded_command(
    monkeypatch: pytest.MonkeyPatch, flags: str, command: str
) -> None:
    monkeypatch.setenv(BENCH_FLAGS_ENV, flags)
    assert extra_flags() == flags.split()
    assert _command(["--workload", "basic"]) == command
