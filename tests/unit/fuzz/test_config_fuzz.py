"""Fuzzing the configuration: a valid KubeSchedulerConfiguration with one
field made malformed or extreme either loads (and resolves against the real
plugin registry) or fails with ``ConfigError`` whose problems name the field;
never another exception, so ``pyscheduler`` exits 2 with a message instead of
a traceback."""

from __future__ import annotations

import copy
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.config import ConfigError, parse_config
from scheduler.engine.assembly import build_registry, resolve
from tests.unit.fuzz.strategies import examples, garbage

BASE: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "percentageOfNodesToScore": 50,
    "podInitialBackoffSeconds": 1,
    "podMaxBackoffSeconds": 10,
    "clientConnection": {"qps": 50, "burst": 100},
    "leaderElection": {
        "leaderElect": True,
        "leaseDuration": "15s",
        "renewDeadline": "10s",
        "retryPeriod": "2s",
    },
    "profiles": [
        {
            "schedulerName": "fuzz",
            "plugins": {"score": {"enabled": [{"name": "NodeResourcesFit", "weight": 2}]}},
            "pluginConfig": [
                {
                    "name": "NodeResourcesFit",
                    "args": {
                        "scoringStrategy": {
                            "type": "MostAllocated",
                            "resources": [{"name": "cpu", "weight": 1}],
                        }
                    },
                }
            ],
        }
    ],
}

FIELDS: list[tuple[tuple[str | int, ...], st.SearchStrategy[Any]]] = [
    (("percentageOfNodesToScore",), garbage),
    (("podInitialBackoffSeconds",), garbage),
    (("podMaxBackoffSeconds",), garbage),
    (("clientConnection", "qps"), garbage),
    (("clientConnection", "burst"), garbage),
    (("leaderElection", "leaderElect"), garbage),
    (
        ("leaderElection", "leaseDuration"),
        st.one_of(garbage, st.from_regex(r"\A-?\d{1,20}(ns|ms|s|m|h|d)?\Z")),
    ),
    (("leaderElection", "renewDeadline"), garbage),
    (("profiles",), garbage),
    (("profiles", 0, "schedulerName"), garbage),
    (("profiles", 0, "plugins"), garbage),
    (("profiles", 0, "plugins", "score", "enabled", 0, "weight"), garbage),
    (("profiles", 0, "plugins", "score", "enabled", 0, "name"), garbage),
    (("profiles", 0, "pluginConfig", 0, "args"), garbage),
    (("profiles", 0, "pluginConfig", 0, "args", "scoringStrategy", "type"), garbage),
    (
        ("profiles", 0, "pluginConfig", 0, "args", "scoringStrategy", "resources", 0, "weight"),
        garbage,
    ),
]


def _mutated(choice: tuple[tuple[str | int, ...], Any]) -> tuple[tuple[str | int, ...], str]:
    path, value = choice
    document = copy.deepcopy(BASE)
    target: Any = document
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return path, yaml.safe_dump(document)


mutations = st.one_of([values.map(lambda v, p=path: (p, v)) for path, values in FIELDS]).map(
    _mutated
)


def test_the_base_document_is_valid() -> None:
    resolve(parse_config(yaml.safe_dump(BASE)), build_registry())


@settings(
    max_examples=examples(100),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(mutations)
def test_a_malformed_config_is_refused_naming_the_field(
    mutation: tuple[tuple[str | int, ...], str],
) -> None:
    path, text = mutation
    problems: tuple[str, ...] = ()
    try:
        resolve(parse_config(text), build_registry())
    except ConfigError as error:
        problems = error.problems
    if not problems:
        return
    names = [str(step) for step in path if isinstance(step, str)]
    joined = " ".join(problems)
    assert any(name in joined for name in names[-2:]), (path, problems)
