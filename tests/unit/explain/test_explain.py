"""``kubectl pyscheduler explain``: rendering, the kubeconfig, the two routes."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.explain.cli import EXIT_INPUT, EXIT_UNAVAILABLE, main
from scheduler.explain.diagnosis import Diagnosis, Verdict, from_attempts, render
from scheduler.explain.fetch import load_identity, service_proxy_url

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
DEMO = [str(EXAMPLES / "nodes.yaml"), str(EXAMPLES / "pods.yaml")]
CONFIG = str(EXAMPLES / "scheduler-config.yaml")

FAILED = {
    "cycle": 3,
    "result": "Unschedulable",
    "message": "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu.",
    "reasons": {"Insufficient cpu": 2, "node(s) had untolerated taint(s)": 1},
    "rejectedNodes": 3,
    "nodes": {
        "tainted": {
            "plugin": "TaintToleration",
            "code": "UnschedulableAndUnresolvable",
            "reasons": ["node(s) had untolerated taint(s)"],
        },
        "busy": {
            "plugin": "NodeResourcesFit",
            "code": "Unschedulable",
            "reasons": ["Insufficient cpu"],
        },
        "full": {
            "plugin": "NodeResourcesFit",
            "code": "Unschedulable",
            "reasons": ["Insufficient cpu", "Insufficient memory"],
        },
    },
}


def verdicts(*items: tuple[str, str, int]) -> list[Verdict]:
    return [Verdict(plugin, code, tuple(f"r{i}" for i in range(n))) for plugin, code, n in items]


@pytest.mark.parametrize(
    ("nodes", "order"),
    [
        pytest.param(
            {
                "a": verdicts(("P", "Unschedulable", 1), ("Q", "Unschedulable", 1)),
                "b": verdicts(("P", "Unschedulable", 1)),
            },
            ["b", "a"],
            id="fewer failing plugins first",
        ),
        pytest.param(
            {
                "a": verdicts(("P", "UnschedulableAndUnresolvable", 1)),
                "b": verdicts(("P", "Unschedulable", 1)),
            },
            ["b", "a"],
            id="a resolvable failure before an unresolvable one",
        ),
        pytest.param(
            {"a": verdicts(("P", "Unschedulable", 2)), "b": verdicts(("P", "Unschedulable", 1))},
            ["b", "a"],
            id="fewer reasons first",
        ),
        pytest.param(
            {"b": verdicts(("P", "Unschedulable", 1)), "a": verdicts(("P", "Unschedulable", 1))},
            ["a", "b"],
            id="ties by name",
        ),
    ],
)
def test_closest_to_fitting_first(nodes: dict[str, list[Verdict]], order: list[str]) -> None:
    diagnosis = Diagnosis("ns/p", "Unschedulable", nodes=nodes)
    assert [name for name, _ in diagnosis.closest_first()] == order


def test_render_groups_by_reason_and_lists_what_nodes_lack() -> None:
    text = render(from_attempts("ns/p", [{"result": "Unschedulable"}, FAILED]))
    assert "pod ns/p: Unschedulable (cycle 3)" in text
    assert "  Insufficient cpu: busy, full" in text
    lines = text.splitlines()
    table = lines[lines.index("closest to fitting first (what each node lacks):") + 2 :]
    assert [line.split()[0] for line in table] == ["busy", "full", "tainted"]


def test_no_attempt_is_said_plainly() -> None:
    assert "no scheduling attempt recorded" in render(from_attempts("ns/p", []))


def write_kubeconfig(path: Path, server: str, token: str = "t0k3n") -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "main",
                "contexts": [
                    {"name": "main", "context": {"cluster": "c", "user": "u"}},
                    {"name": "other", "context": {"cluster": "c2", "user": "u"}},
                ],
                "clusters": [
                    {"name": "c", "cluster": {"server": server + "/"}},
                    {"name": "c2", "cluster": {"server": "https://elsewhere"}},
                ],
                "users": [{"name": "u", "user": {"token": token}}],
            }
        )
    )
    return path


def test_kubeconfig_identity_and_service_proxy_url(tmp_path: Path) -> None:
    config = write_kubeconfig(tmp_path / "kubeconfig", "https://api:6443")
    identity = load_identity(str(config))
    assert (identity.server, identity.token) == ("https://api:6443", "t0k3n")
    assert load_identity(str(config), "other").server == "https://elsewhere"
    assert service_proxy_url(
        identity.server, "pyscheduler-system/pyscheduler", "/debug/pods/a/b"
    ) == (
        "https://api:6443/api/v1/namespaces/pyscheduler-system/services/"
        "https:pyscheduler:10259/proxy/debug/pods/a/b"
    )


class _Ops(BaseHTTPRequestHandler):
    seen: list[dict[str, Any]] = []  # noqa: RUF012 - per-test, reset by the fixture

    def do_GET(self) -> None:
        self.seen.append({"path": self.path, "auth": self.headers.get("Authorization")})
        if self.path == "/debug/pods/demo/waiting":
            status, body = 200, {"namespace": "demo", "name": "waiting", "attempts": [FAILED]}
        else:
            status, body = 404, {"error": "no scheduling attempts recorded for pod demo/x"}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def ops() -> Iterator[str]:
    _Ops.seen = []
    server = HTTPServer(("127.0.0.1", 0), _Ops)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_live_reads_debug_pods_with_the_kubeconfig_token(ops: str, tmp_path: Path) -> None:
    config = write_kubeconfig(tmp_path / "kubeconfig", "https://unused:6443")
    out = io.StringIO()
    code = main(["explain", "demo/waiting", "--url", ops, "--kubeconfig", str(config)], out=out)
    assert code == 0
    assert _Ops.seen == [{"path": "/debug/pods/demo/waiting", "auth": "Bearer t0k3n"}]
    assert "Insufficient cpu: busy, full" in out.getvalue()


def test_live_error_is_one_line(ops: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["explain", "demo/x", "--url", ops, "--token", "x"], out=io.StringIO())
    err = capsys.readouterr().err
    assert code == EXIT_UNAVAILABLE
    assert "404: no scheduling attempts recorded for pod demo/x" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["explain", "a/b/c", "--port", "1"], id="a malformed pod name"),
        pytest.param(["explain", "demo/x", "--token", "x"], id="no endpoint given"),
    ],
)
def test_bad_input_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv, out=io.StringIO()) == EXIT_INPUT
    assert "kubectl pyscheduler:" in capsys.readouterr().err


def test_snapshot_gives_the_live_message_and_every_plugin_verdict() -> None:
    out = io.StringIO()
    argv = ["explain", "--snapshot", *DEMO, "--config", CONFIG, "demo/too-big", "-o", "json"]
    assert main(argv, out=out) == 0
    body = json.loads(out.getvalue())
    assert body["result"] == "Unschedulable"
    assert body["message"].startswith("0/3 nodes are available:")
    assert body["complete"] is True
    assert set(body["nodes"]) == {"small", "large", "highmem"}


def test_snapshot_says_how_much_each_node_is_short() -> None:
    out = io.StringIO()
    argv = ["explain", "--snapshot", *DEMO, "--config", CONFIG, "demo/too-big", "-o", "json"]
    assert main(argv, out=out) == 0
    shortfall = json.loads(out.getvalue())["shortfall"]
    # too-big asks for more CPUs than any node has free; small has 750m free of 2.
    assert set(shortfall) == {"small", "large", "highmem"}
    assert all("cpu" in short for short in shortfall.values())
    text = io.StringIO()
    assert main(argv[:-2], out=text) == 0
    assert "SHORT BY" in text.getvalue()
