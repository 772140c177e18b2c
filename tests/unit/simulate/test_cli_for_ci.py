"""``pyscheduler simulate`` as a CI gate and as data: ``--fail-on-unschedulable``
exits 3 when a pod does not fit, the JSON report is a typed camelCase
document, and pods left alone for their schedulerName are counted and named."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from scheduler.simulate.cli import EXIT_UNSCHEDULABLE
from scheduler.simulate.cli import main as simulate_main
from scheduler.simulate.report import REPORT_API_VERSION, REPORT_KIND

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
CONFIG = str(EXAMPLES / "scheduler-config.yaml")
DEMO = [str(EXAMPLES / "nodes.yaml"), str(EXAMPLES / "pods.yaml")]


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return simulate_main([*argv], out=out), out.getvalue()


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        pytest.param([], 0, id="without the flag: 0 whatever the pods' fate"),
        pytest.param(["--fail-on-unschedulable"], EXIT_UNSCHEDULABLE, id="a pod does not fit: 3"),
        pytest.param(
            ["--fail-on-unschedulable", "-o", "yaml"], EXIT_UNSCHEDULABLE, id="also with -o yaml"
        ),
    ],
)
def test_fail_on_unschedulable_gates_ci(extra: list[str], expected: int) -> None:
    code, _ = run(*DEMO, "--config", CONFIG, "--seed", "1", *extra)

    assert code == expected


def test_everything_fits_exits_0_even_with_the_flag(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
        "status: {allocatable: {cpu: '8', memory: 16Gi, pods: '110'}}\n"
    )
    pods = tmp_path / "pods.yaml"
    pods.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: d}\n"
        "spec: {schedulerName: pyscheduler, containers: [{name: c, image: i}]}\n"
    )

    code, _ = run(str(nodes), str(pods), "--fail-on-unschedulable")

    assert code == 0


def test_the_json_report_is_a_typed_camel_case_document() -> None:
    _, out = run(*DEMO, "--config", CONFIG, "--seed", "1", "-o", "json")
    body = json.loads(out)

    assert (body["apiVersion"], body["kind"]) == (REPORT_API_VERSION, REPORT_KIND)
    keys = {key for section in ("pods", "nodes") for item in body[section] for key in item}
    assert not {key for key in keys if "_" in key}
    assert "cpuRequestedMilli" in keys
    assert body["summary"]["notScheduled"] >= 1


def test_pods_of_other_schedulers_are_counted_and_named(tmp_path: Path) -> None:
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text(
        "apiVersion: v1\nkind: List\nitems:\n"
        "- {apiVersion: v1, kind: Node, metadata: {name: n},"
        " status: {allocatable: {cpu: '8', memory: 16Gi, pods: '110'}}}\n"
        "- {apiVersion: v1, kind: Pod, metadata: {name: a, namespace: d},"
        " spec: {containers: [{name: c, image: i}]}}\n"
        "- {apiVersion: v1, kind: Pod, metadata: {name: b, namespace: d},"
        " spec: {schedulerName: default-scheduler, containers: [{name: c, image: i}]}}\n"
    )

    code, table = run(str(snapshot))
    _, out = run(str(snapshot), "-o", "json")

    assert code == 0
    assert "no pending pods to place" in table
    assert (
        "2 pending pods skipped: no profile of this configuration has their schedulerName" in table
    )
    assert "default-scheduler: 2" in table
    assert json.loads(out)["skipped"] == {"default-scheduler": 2}
