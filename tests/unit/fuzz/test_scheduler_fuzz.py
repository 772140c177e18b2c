"""Fuzzing the whole scheduler: malformed and extreme pods and nodes go
through the real informers, event handlers, queue and scheduling cycle
(``SchedulerApp`` over an in-memory API). Well-formed pods still bind; each
malformed pod is told why, in its ``PodScheduled`` condition, naming the
field; each malformed node is logged with its name and the field; nothing
raises out of a handler and the app never stops."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.app.root import AppOptions, SchedulerApp
from scheduler.config import parse_config
from scheduler.framework import parse_node, parse_pod
from tests.support.scheduler import scheduler_config
from tests.support.wait import ConditionTimeout, eventually
from tests.unit.fuzz.fakeapi import FakeApi, Raw
from tests.unit.fuzz.strategies import (
    Mutation,
    base_node,
    base_pod,
    examples,
    node_mutations,
    pod_mutations,
)

SCHEDULER = "fuzz"


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _renamed(raw: Raw, name: str) -> Raw:
    raw["metadata"]["name"] = name
    if "uid" in raw["metadata"]:
        raw["metadata"]["uid"] = f"uid-{name}"
    return raw


async def _run(pods: list[Mutation], nodes: list[Mutation]) -> None:
    good_pods = [base_pod(f"good-{i}", SCHEDULER) for i in range(2)]
    bad_pods = [_renamed(raw, f"fuzzed-{i}") for i, (_, raw) in enumerate(pods)]
    good_nodes = [base_node(f"good-node-{i}") for i in range(2)]
    bad_nodes = [_renamed(raw, f"fuzzed-node-{i}") for i, (_, raw) in enumerate(nodes)]
    api = FakeApi([*good_pods, *bad_pods], [*good_nodes, *bad_nodes])
    config = parse_config(scheduler_config(SCHEDULER))
    app = SchedulerApp(
        config,
        api,  # type: ignore[arg-type]
        AppOptions(bind_address="127.0.0.1", port=0, bind_grace_seconds=1, flush_grace_seconds=1),
    )
    kept = _Kept()
    logging.getLogger().addHandler(kept)
    task = asyncio.create_task(app.run())
    try:

        async def settled() -> bool:
            if task.done():
                task.result()
                raise AssertionError("the app stopped")
            good = all(f"default/good-{i}" in api.binds for i in range(2))
            return good and all(_settled(api, raw) for raw in bad_pods)

        try:
            await eventually(settled, timeout=15, what="every pod bound or told why")
        except ConditionTimeout:
            unsettled = {
                parse_pod(raw).key: (raw["spec"], api.conditions.get(parse_pod(raw).key))
                for raw in [*good_pods, *bad_pods]
                if not _settled(api, raw)
            }
            raise AssertionError(f"unsettled: {unsettled}; binds {api.binds}") from None
    finally:
        app.stop()
        await asyncio.wait_for(task, timeout=30)
        logging.getLogger().removeHandler(kept)

    for raw in bad_pods:
        pod = parse_pod(raw)
        told = api.conditions.get(pod.key)
        if pod.parse_error:
            assert told is not None, pod.key
            assert pod.parse_error in told["message"], (told, pod.parse_error)
    for raw in bad_nodes:
        node = parse_node(raw)
        if node.parse_error:
            assert any(
                node.name in record.getMessage() and node.parse_error in record.getMessage()
                for record in kept.records
            ), node.parse_error
    failures = [r for r in kept.records if r.levelno >= logging.ERROR]
    assert not failures, [r.getMessage() for r in failures]


def _settled(api: FakeApi, raw: Raw) -> bool:
    pod = parse_pod(raw)
    if pod.deleting or (pod.scheduling_gates and not pod.parse_error):
        return pod.key not in api.binds  # never scheduled, never bound
    told = api.conditions.get(pod.key) or {}
    return pod.key in api.binds or (told.get("status") == "False" and bool(told.get("message")))


@settings(
    max_examples=examples(12),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    st.lists(pod_mutations(SCHEDULER), min_size=1, max_size=4),
    st.lists(node_mutations(), max_size=2),
)
def test_malformed_objects_never_stop_the_scheduler(
    pods: list[Mutation], nodes: list[Mutation]
) -> None:
    asyncio.run(_run(pods, nodes))


def test_fake_api_round_trip() -> None:
    """The fake itself: a bind shows on the pod and through the watch."""

    async def run() -> Any:
        api = FakeApi([base_pod("p", SCHEDULER)], [])
        stream = api.watch(
            parse_pod(base_pod()).__class__
            and __import__("scheduler.kube.resources", fromlist=["PODS"]).PODS
        )
        waiting = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(0)
        await api.bind("default", "p", "uid-p", "n1")
        event = await waiting
        await stream.aclose()
        return event

    event = asyncio.run(run())
    assert (event["type"], event["object"]["spec"]["nodeName"]) == ("MODIFIED", "n1")
