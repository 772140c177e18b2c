"""A real Prometheus server on the host: Kubernetes service discovery of the
scheduler's pods, HTTPS scrapes with the token of the shipped scraper
ServiceAccount (bound to ``pyscheduler-metrics-reader``), and the shipped
PrometheusRule converted to a plain rule file.

The server is upstream's, built from the pinned module in hack/prometheus:
Debian's prometheus 2.42.0+ds has no Kubernetes service discovery (its
config parser answers ``field kubernetes_sd_configs not found in type
config.ScrapeConfig``). Debian's ``promtool`` checks the rule file."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from localcluster.cluster import free_port
from localcluster.process import ComponentProcess
from tests.e2e.cluster import Cluster
from tests.e2e.node import REPO, wait_for
from tests.e2e.workloads import NAMESPACE

RULE = REPO / "manifests" / "monitoring" / "prometheusrule.yaml"
SCRAPER = REPO / "manifests" / "monitoring" / "scraper.yaml"


def rule_file(directory: Path) -> Path:
    """The PrometheusRule's spec is a rule file's content (``groups``)."""
    rule = yaml.safe_load(RULE.read_text())
    path = directory / "pyscheduler-rules.yaml"
    path.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}, sort_keys=False))
    return path


def check_rules(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [shutil.which("promtool") or "promtool", "check", "rules", str(path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


class Prometheus:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.directory = cluster.run_dir / "prometheus"
        self.directory.mkdir(exist_ok=True)
        self.port = free_port()
        self.process: ComponentProcess | None = None

    def scraper_token(self) -> str:
        """The shipped scraper's long-lived token Secret, as the PodMonitor uses it."""
        self.cluster.kubectl("apply", "-f", str(SCRAPER))

        def token() -> str:
            secret = self.cluster.json(
                "get", "secret", "pyscheduler-metrics-scraper-token", "-n", NAMESPACE
            )
            return base64.b64decode(secret.get("data", {}).get("token", "")).decode()

        return str(wait_for("the scraper token Secret filled", token, 120))

    def start(self) -> None:
        cluster = self.cluster
        assert cluster.plane is not None
        (self.directory / "scrape-token").write_text(self.scraper_token())
        # Discovery lists pods: that is not the scraper's job, it uses the admin.
        (self.directory / "sd-token").write_text(cluster.plane.token)
        rules = rule_file(self.directory)
        config = {
            "global": {"scrape_interval": "5s", "evaluation_interval": "5s"},
            "rule_files": [str(rules)],
            "scrape_configs": [
                {
                    "job_name": "pyscheduler",
                    "scheme": "https",
                    "metrics_path": "/metrics",
                    "authorization": {
                        "type": "Bearer",
                        "credentials_file": str(self.directory / "scrape-token"),
                    },
                    "tls_config": {"insecure_skip_verify": True},
                    "kubernetes_sd_configs": [
                        {
                            "role": "pod",
                            "api_server": cluster.plane.server,
                            "namespaces": {"names": [NAMESPACE]},
                            "authorization": {"credentials_file": str(self.directory / "sd-token")},
                            "tls_config": {"ca_file": str(cluster.plane.ca_file)},
                        }
                    ],
                    # What the shipped PodMonitor selects: the scheduler pods'
                    # port named metrics.
                    "relabel_configs": [
                        {
                            "source_labels": [
                                "__meta_kubernetes_pod_label_app_kubernetes_io_name",
                                "__meta_kubernetes_pod_label_app_kubernetes_io_component",
                            ],
                            "regex": "pyscheduler;scheduler",
                            "action": "keep",
                        },
                        {
                            "source_labels": ["__meta_kubernetes_pod_container_port_name"],
                            "regex": "metrics",
                            "action": "keep",
                        },
                        {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
                    ],
                }
            ],
        }
        path = self.directory / "prometheus.yml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        self.process = ComponentProcess(
            "prometheus",
            [
                str(cluster.prometheus),
                f"--config.file={path}",
                f"--storage.tsdb.path={self.directory / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            cluster.run_dir / "logs" / "prometheus.log",
        )
        self.process.start()
        wait_for("Prometheus ready", lambda: self.get("/-/ready", raw=True), 120)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    def get(self, path: str, raw: bool = False, **query: str) -> Any:
        url = f"http://127.0.0.1:{self.port}{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        with urllib.request.urlopen(url, timeout=10) as response:
            body = response.read().decode()
        return body if raw else json.loads(body)["data"]

    def query(self, expression: str) -> list[dict[str, Any]]:
        return list(self.get("/api/v1/query", query=expression)["result"])

    def scalar(self, expression: str) -> float | None:
        result = self.query(expression)
        return float(result[0]["value"][1]) if result else None
