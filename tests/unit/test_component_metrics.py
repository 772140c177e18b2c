"""The component metrics an operator's dashboards expect: build info, the
feature gates in force, the event loop's lag and longest recent stall, and
kube-scheduler's ``--disabled-metrics`` escape hatch."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from scheduler.app.buildinfo import build_info_labels
from scheduler.app.flags import parse_args
from scheduler.ops.looplag import LoopLag
from scheduler.ops.metrics import SchedulerMetrics
from scheduler.ops.server import _WithoutFamilies
from tests.support.clock import FakeClock


def _exposition() -> tuple[SchedulerMetrics, CollectorRegistry]:
    registry = CollectorRegistry()
    return SchedulerMetrics(registry), registry


def test_build_info_is_one_with_our_version_labels() -> None:
    metrics, registry = _exposition()

    metrics.build_info({**build_info_labels(), "git_version": "v9.9.9"})

    text = generate_latest(registry).decode()
    line = next(line for line in text.splitlines() if line.startswith("kubernetes_build_info{"))
    assert 'git_version="v9.9.9"' in line
    assert 'compiler="cpython"' in line
    assert line.endswith(" 1.0")


@pytest.mark.parametrize(
    ("name", "value", "stage", "sample"),
    [
        pytest.param(
            "NodeDeclaredFeatures", True, "BETA",
            'kubernetes_feature_enabled{name="NodeDeclaredFeatures",stage="BETA"} 1.0',
            id="beta on",
        ),
        pytest.param(
            "SidecarContainers", True, "GA",
            'kubernetes_feature_enabled{name="SidecarContainers",stage=""} 1.0',
            id="GA has no stage",
        ),
        pytest.param(
            "GangScheduling", False, "ALPHA",
            'kubernetes_feature_enabled{name="GangScheduling",stage="ALPHA"} 0.0', id="alpha off",
        ),
    ],
)  # fmt: skip
def test_feature_enabled_reports_each_gate(name: str, value: bool, stage: str, sample: str) -> None:
    metrics, registry = _exposition()

    metrics.feature_gates({name: (value, stage)})

    assert sample in generate_latest(registry).decode().splitlines()


class _Lags:
    def __init__(self) -> None:
        self.seen: list[tuple[float, float]] = []

    def loop_lag(self, seconds: float, longest_recent: float) -> None:
        self.seen.append((seconds, longest_recent))


@pytest.mark.parametrize(
    ("observations", "expected_longest"),
    [
        pytest.param([(0.01, 1.0)], [0.01], id="one tick"),
        pytest.param([(0.5, 1.0), (0.01, 2.0)], [0.5, 0.5], id="a stall stays the longest"),
        pytest.param(
            [(0.5, 1.0), (0.02, 61.0), (0.01, 121.0)],
            [0.5, 0.5, 0.02],
            id="kept for the next window, gone after it",
        ),
        pytest.param([(0.5, 1.0), (0.01, 200.0)], [0.5, 0.01], id="gone after idle windows"),
    ],
)
def test_loop_lag_keeps_the_longest_stall_of_the_last_windows(
    observations: list[tuple[float, float]], expected_longest: list[float]
) -> None:
    lags = _Lags()
    clock = FakeClock()
    monitor = LoopLag(clock, lags, window=60.0)

    for lag, after in observations:
        monitor.observe(lag, clock.now() + after)

    assert [longest for _, longest in lags.seen] == expected_longest
    assert [lag for lag, _ in lags.seen] == [lag for lag, _ in observations]


def test_disabled_metrics_are_left_out_of_the_exposition() -> None:
    _, registry = _exposition()
    argv = ["--disabled-metrics=scheduler_schedule_attempts_total,scheduler_pending_pods"]
    disabled = frozenset(parse_args(argv).disabled_metrics)

    text = generate_latest(_WithoutFamilies(registry, disabled)).decode()  # type: ignore[arg-type]

    assert "scheduler_schedule_attempts_total" not in text
    assert "scheduler_pending_pods" not in text
    assert "scheduler_scheduling_attempt_duration_seconds" in text
