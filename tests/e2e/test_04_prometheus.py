"""Prometheus for real: service discovery finds both replicas, scrapes them
over HTTPS with the shipped scraper's token, the counters add up to the pods
pyscheduler bound (judged from the API), exactly one replica reports itself
leader, the shipped alert rules load and evaluate; a scrape without a token,
or with a token the API server rejects, is refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.cluster import Cluster
from tests.e2e.node import wait_for
from tests.e2e.prometheus import Prometheus, check_rules, rule_file
from tests.e2e.workloads import Deployed, scheduler_pods


@pytest.fixture(scope="module")
def prometheus(cluster: Cluster, deployed: Deployed) -> Iterator[Prometheus]:
    with cluster.phase("Prometheus (discovery, scrapes, rules)"):
        server = Prometheus(cluster)
        try:
            server.start()
            wait_for(
                "both replicas scraped up",
                lambda: server.scalar('sum(up{job="pyscheduler"})') == 2.0,
                180,
                2,
            )
        except BaseException:
            server.stop()
            raise
    try:
        yield server
    finally:
        server.stop()


def bound_by_pyscheduler(cluster: Cluster) -> int:
    return sum(
        1
        for pod in cluster.json("get", "pods", "-A")["items"]
        if pod["spec"].get("schedulerName") == "pyscheduler" and pod["spec"].get("nodeName")
    )


def test_service_discovery_finds_both_replicas_and_both_are_up(
    cluster: Cluster, prometheus: Prometheus
) -> None:
    targets = prometheus.get("/api/v1/targets")["activeTargets"]
    ours = [t for t in targets if t["labels"].get("job") == "pyscheduler"]
    assert sorted(t["labels"]["pod"] for t in ours) == sorted(
        p["metadata"]["name"] for p in scheduler_pods(cluster)
    )
    assert {t["health"] for t in ours} == {"up"}, [t.get("lastError") for t in ours]
    assert all(t["scrapeUrl"].startswith("https://") for t in ours)
    cluster.summary["Prometheus targets up"] = f"{len(ours)}/2"


def test_scheduled_attempts_summed_over_replicas_equal_the_pods_bound(
    cluster: Cluster, prometheus: Prometheus
) -> None:
    expression = 'sum(scheduler_schedule_attempts_total{job="pyscheduler",result="scheduled"})'
    last: dict[str, Any] = {}

    def equal() -> bool:
        last["metric"] = prometheus.scalar(expression)
        last["api"] = bound_by_pyscheduler(cluster)
        return bool(last["metric"] == float(last["api"]))

    wait_for(f"{expression} == pods bound in the API", equal, 60, 3)
    cluster.summary["scheduled attempts (Prometheus) / bound (API)"] = (
        f"{last['metric']:.0f} / {last['api']}"
    )


def test_exactly_one_replica_reports_itself_leader(
    cluster: Cluster, prometheus: Prometheus
) -> None:
    series = prometheus.query('leader_election_master_status{job="pyscheduler"}')
    assert len(series) == 2
    assert sorted(float(s["value"][1]) for s in series) == [0.0, 1.0]
    leader = next(s["metric"]["pod"] for s in series if float(s["value"][1]) == 1.0)
    assert leader == cluster.summary.get("leader", leader)
    cluster.summary["leader_election_master_status"] = f"1 of {len(series)} ({leader})"


def test_the_shipped_rules_pass_promtool_and_evaluate_without_errors(
    cluster: Cluster, prometheus: Prometheus
) -> None:
    checked = check_rules(rule_file(cluster.run_dir))
    assert checked.returncode == 0, checked.stdout + checked.stderr

    def evaluated() -> list[dict[str, Any]]:
        groups = prometheus.get("/api/v1/rules")["groups"]
        rules = [rule for group in groups for rule in group["rules"]]
        done = all(not r["lastEvaluation"].startswith("0001") for r in rules)
        return rules if rules and done else []

    rules = wait_for("every rule evaluated once", evaluated, 120, 2)
    assert isinstance(rules, list)
    assert [(r["name"], r.get("lastError")) for r in rules if r["health"] != "ok"] == []
    cluster.summary["alert rules evaluated ok"] = len(rules)


@pytest.mark.parametrize(
    ("token", "status"),
    [
        pytest.param(None, 403, id="no-token-is-anonymous-and-forbidden"),
        pytest.param("not-a-token", 401, id="a-rejected-token-is-unauthorized"),
    ],
)
def test_a_scrape_without_a_valid_token_is_refused(
    cluster: Cluster, prometheus: Prometheus, token: str | None, status: int
) -> None:
    for pod in scheduler_pods(cluster):
        got, body = cluster.https_get(f"https://{pod['status']['podIP']}:10259/metrics", token)
        assert got == status, body
        assert "scheduler_schedule_attempts_total" not in body
