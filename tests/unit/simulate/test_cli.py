"""``pyscheduler simulate`` from the command line: outputs, edits, errors."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import pytest
import yaml

from scheduler.app.cli import main as pyscheduler_main
from scheduler.simulate.cli import EXIT_INPUT, one_line_logging
from scheduler.simulate.cli import main as simulate_main
from scheduler.simulate.snapshot import load_text
from tests.support.builders import make_node, make_pod

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
CONFIG = str(EXAMPLES / "scheduler-config.yaml")
DEMO = [str(EXAMPLES / "nodes.yaml"), str(EXAMPLES / "pods.yaml")]


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = simulate_main([*argv], out=out)
    return code, out.getvalue()


def test_demo_snapshot_as_a_table() -> None:
    code, out = run(*DEMO, "--config", CONFIG, "--seed", "1")
    assert code == 0
    assert "demo/too-big" in out
    assert "Insufficient cpu" in out
    assert out.rstrip().endswith("not scheduled")


def test_json_names_every_pending_pod_and_node() -> None:
    code, out = run(*DEMO, "--config", CONFIG, "--seed", "1", "-o", "json")
    body = json.loads(out)
    assert code == 0
    assert {p["pod"] for p in body["pods"]} >= {"demo/web-1", "demo/too-big"}
    assert {n["node"] for n in body["nodes"]} == {"small", "large", "highmem"}


def test_yaml_output_starts_a_second_run(tmp_path: Path) -> None:
    code, out = run(*DEMO, "--config", CONFIG, "--seed", "1", "-o", "yaml")
    assert code == 0
    first = tmp_path / "after.yaml"
    first.write_text(out)
    bound = [o for o in load_text(out, "after").objects if (o.get("spec") or {}).get("nodeName")]
    placed = {
        p["pod"]
        for p in json.loads(run(*DEMO, "--config", CONFIG, "--seed", "1", "-o", "json")[1])["pods"]
        if p["node"]
    }
    assert len(bound) == len(placed) + 1  # and the one placed by hand
    code, again = run(str(first), "--config", CONFIG, "-o", "json")
    assert code == 0
    left = {p["pod"] for p in json.loads(again)["pods"]}
    assert left == {"demo/too-big", "demo/no-toleration", "demo/needs-gpu", "demo/gated"}


def test_what_if_flags(tmp_path: Path) -> None:
    code, out = run(
        *DEMO,
        "--config",
        CONFIG,
        "--seed",
        "1",
        "--add-nodes",
        "large=1",
        "--cordon",
        "small",
        "-o",
        "json",
    )
    body = json.loads(out)
    nodes = {n["node"]: n for n in body["nodes"]}
    assert code == 0
    assert nodes["small"]["unschedulable"]
    assert nodes["small"]["pods"] == 0
    assert "large-sim-1" in nodes


def test_extra_pods_and_progress(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    extra = tmp_path / "extra.yaml"
    extra.write_text(yaml.safe_dump(make_pod("extra", "demo").scheduler("pyscheduler").obj()))
    code, out = run(*DEMO, "--config", CONFIG, "--pods", str(extra), "--progress")
    assert code == 0
    assert "demo/extra" in out
    assert "pyscheduler simulate:" in capsys.readouterr().err


def test_reachable_as_a_pyscheduler_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    assert pyscheduler_main(["simulate", *DEMO, "--config", CONFIG, "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["pods"]


NODE = make_node("n").obj()


@pytest.mark.parametrize(
    ("text", "flags", "message"),
    [
        pytest.param(
            "apiVersion: v1\nkind: [\n",
            (),
            ": line 3: not valid YAML",
            id="broken YAML names its line",
        ),
        pytest.param(
            yaml.safe_dump_all([NODE, {"apiVersion": "v1", "kind": "Pod", "metadata": {}}]),
            (),
            "in.yaml: document 2 (Pod): metadata.name: required",
            id="a nameless object names its document and field",
        ),
        pytest.param(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "List",
                    "items": [NODE, make_pod("p").requests(cpu="lots").obj()],
                }
            ),
            (),
            "in.yaml: document 1, items[1] (Pod default/p): "
            "spec.containers[0].resources.requests.cpu: invalid quantity 'lots'",
            id="a bad quantity names the list item and field",
        ),
        pytest.param(
            yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": {"a": 1}}),
            (),
            "in.yaml: document 1: items: expected a list, got an object",
            id="items that are not a list",
        ),
        pytest.param(
            yaml.safe_dump(NODE),
            ("--remove-node", "ghost"),
            "--remove-node ghost: no node of that name in the snapshot",
            id="an edit naming an unknown node",
        ),
        pytest.param(
            yaml.safe_dump(NODE),
            ("--add-nodes", "n=many"),
            "--add-nodes n=many: expected TEMPLATE=COUNT",
            id="an add-nodes count that is not a number",
        ),
        pytest.param(
            yaml.safe_dump(NODE),
            ("--config", "/nonexistent/config.yaml"),
            "invalid configuration /nonexistent/config.yaml",
            id="a configuration that cannot be read",
        ),
    ],
)
def test_malformed_input_is_one_line_never_a_traceback(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    text: str,
    flags: tuple[str, ...],
    message: str,
) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(text)
    code, out = run(str(path), *flags)
    err = capsys.readouterr().err
    assert (code, out) == (EXIT_INPUT, "")
    assert message in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


AUTOSCALE = EXAMPLES / "autoscale"


def test_autoscale_enforcer_scenario_runs_with_its_start_step() -> None:
    code, out = run(
        str(AUTOSCALE / "cluster.yaml"),
        str(AUTOSCALE / "vms.yaml"),
        "--config",
        str(AUTOSCALE / "scheduler-config.yaml"),
        "--seed",
        "1",
        "-o",
        "json",
    )
    assert code == 0
    pods = json.loads(out)["pods"]
    assert pods
    assert all(p["result"] == "Scheduled" for p in pods)


def test_a_plugin_that_cannot_start_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(DEMO[0], "--config", str(AUTOSCALE / "scheduler-config.yaml"))
    err = capsys.readouterr().err
    assert (code, out) == (EXIT_INPUT, "")
    assert "AutoscaleEnforcer: no valid config in ConfigMap" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("pod_spec", "message"),
    [
        pytest.param(
            {"tolerations": "oops"},
            "document 2 (Pod default/p): spec.tolerations: expected a list, got a string 'oops'",
            id="tolerations that are not a list",
        ),
        pytest.param(
            {"nodeSelector": ["a"]},
            "spec.nodeSelector: expected an object, got a list",
            id="a node selector that is not a map",
        ),
        pytest.param(
            {"containers": [{"name": "c", "image": "x", "ports": [80]}]},
            "spec.containers[0].ports[0]: expected an object, got int",
            id="a port that is not an object",
        ),
    ],
)
def test_fields_of_the_wrong_type_are_named(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    pod_spec: dict[str, object],
    message: str,
) -> None:
    pod = make_pod("p").obj()
    pod["spec"].update(pod_spec)
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([NODE, pod]))
    assert run(str(path)) == (EXIT_INPUT, "")
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_log_records_are_one_line_without_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    root = logging.getLogger()
    before = list(root.handlers)
    with one_line_logging():
        try:
            raise ValueError("broken")
        except ValueError:
            logging.getLogger("elsewhere").exception("handler failed")
    assert root.handlers == before  # restored
    err = capsys.readouterr().err
    assert err == "pyscheduler simulate: error: handler failed (ValueError: broken)\n"
