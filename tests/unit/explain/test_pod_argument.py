"""``kubectl pyscheduler explain`` takes the pod as kubectl plugins do: a bare
name in ``-n/--namespace``, else in the kubeconfig context's namespace, or
``NAMESPACE/POD``."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.explain.cli import InputError, split_pod
from scheduler.explain.fetch import context_namespace


@pytest.mark.parametrize(
    ("value", "namespace", "default", "expected"),
    [
        pytest.param("ns/p", None, "default", ("ns", "p"), id="NAMESPACE/POD"),
        pytest.param("p", None, "default", ("default", "p"), id="bare name, default namespace"),
        pytest.param("p", "team", "default", ("team", "p"), id="bare name with -n"),
        pytest.param("p", None, "ctx-ns", ("ctx-ns", "p"), id="bare name, the context's namespace"),
        pytest.param("team/p", "team", "default", ("team", "p"), id="-n agreeing with the prefix"),
    ],
)
def test_the_pod_argument(
    value: str, namespace: str | None, default: str, expected: tuple[str, str]
) -> None:
    assert split_pod(value, namespace, default) == expected


@pytest.mark.parametrize(
    ("value", "namespace", "message"),
    [
        pytest.param("a/p", "b", "differs from -n b", id="-n disagreeing with the prefix"),
        pytest.param("a/b/c", None, "expected POD or NAMESPACE/POD", id="two slashes"),
        pytest.param("/p", None, "expected POD or NAMESPACE/POD", id="empty namespace"),
    ],
)
def test_bad_pod_arguments(value: str, namespace: str | None, message: str) -> None:
    with pytest.raises(InputError, match=message):
        split_pod(value, namespace)


@pytest.mark.parametrize(
    ("kubeconfig", "expected"),
    [
        pytest.param(
            "current-context: c\ncontexts:\n- name: c\n  context: {cluster: x, namespace: team}\n",
            "team",
            id="the current context's namespace",
        ),
        pytest.param(
            "current-context: c\ncontexts:\n- name: c\n  context: {cluster: x}\n",
            "default",
            id="a context without one",
        ),
        pytest.param(None, "default", id="no kubeconfig"),
    ],
)
def test_the_context_namespace(tmp_path: Path, kubeconfig: str | None, expected: str) -> None:
    path = tmp_path / "config"
    if kubeconfig is not None:
        path.write_text(kubeconfig)

    assert context_namespace(str(path)) == expected
