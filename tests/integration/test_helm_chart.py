"""examples/helm/pyscheduler: the Helm chart renders exactly what the
kustomize base builds, object by object, with its default values; its values
change what they name, and a config edit renames the ConfigMap and the
Deployment's reference to it, as kustomize's configMapGenerator does.

Rendered with ``helm template`` (helm built from the pinned module in
hack/helm by hack/build-helm.sh, cached like the control plane) and
``kubectl kustomize`` (the pinned kubectl of the control-plane binary); no
cluster needed. If helm cannot be built here the tests fail, saying so
(``tests.support.gotools``): never skipped.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster.binary import control_plane_binary
from tests.support.gotools import built_tool
from tests.support.manifests import CONFIG_KEY, MANIFESTS, REPO_ROOT

CHART = REPO_ROOT / "examples" / "helm" / "pyscheduler"
BUILD_HELM = REPO_ROOT / "hack" / "build-helm.sh"
BUILD_TIMEOUT_SECONDS = 3600
RENDER_TIMEOUT_SECONDS = 120
Obj = dict[str, Any]
Key = tuple[str, str, str, str]


@pytest.fixture(scope="module")
def helm() -> Path:
    return built_tool(BUILD_HELM, BUILD_TIMEOUT_SECONDS)


def _objects(text: str) -> dict[Key, Obj]:
    found: dict[Key, Obj] = {}
    for doc in yaml.safe_load_all(text):
        if not doc:
            continue
        metadata = doc["metadata"]
        key = (doc["apiVersion"], doc["kind"], metadata.get("namespace", ""), metadata["name"])
        assert key not in found, f"{key} rendered twice"
        found[key] = doc
    return found


def _template(helm: Path, *args: str) -> dict[Key, Obj]:
    done = subprocess.run(
        [str(helm), "template", "pyscheduler", str(CHART), *args],
        capture_output=True,
        text=True,
        timeout=RENDER_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return _objects(done.stdout)


def _kustomize(folder: Path) -> dict[Key, Obj]:
    done = subprocess.run(
        [str(control_plane_binary()), "kubectl", "kustomize", str(folder)],
        capture_output=True,
        text=True,
        timeout=RENDER_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return _objects(done.stdout)


@pytest.fixture(scope="module")
def kustomized() -> dict[Key, Obj]:
    return _kustomize(MANIFESTS)


@pytest.fixture(scope="module")
def charted(helm: Path) -> dict[Key, Obj]:
    return _template(helm)


def _one(objects: dict[Key, Obj], kind: str) -> Obj:
    (obj,) = [o for (_, k, _, _), o in objects.items() if k == kind]
    return obj


def _config_volume(deployment: Obj) -> str:
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    (name,) = [v["configMap"]["name"] for v in volumes if "configMap" in v]
    return str(name)


def test_the_chart_renders_the_same_objects_as_the_kustomize_base(
    kustomized: dict[Key, Obj], charted: dict[Key, Obj]
) -> None:
    assert len(kustomized) > 10, "the base builds its objects"
    assert sorted(charted) == sorted(kustomized)


def test_each_object_is_equal_to_the_kustomize_one(
    kustomized: dict[Key, Obj], charted: dict[Key, Obj]
) -> None:
    different = [key for key in kustomized if charted.get(key) != kustomized[key]]
    assert different == [], [(key, charted.get(key), kustomized[key]) for key in different]


def test_the_configmap_has_kustomizes_hashed_name_and_the_deployment_mounts_it(
    charted: dict[Key, Obj],
) -> None:
    configmap = _one(charted, "ConfigMap")
    assert configmap["metadata"]["name"].startswith("pyscheduler-config-")
    assert len(configmap["metadata"]["name"]) == len("pyscheduler-config-") + 10
    assert _config_volume(_one(charted, "Deployment")) == configmap["metadata"]["name"]
    shipped = (MANIFESTS / "scheduler-config.yaml").read_text(encoding="utf-8")
    assert configmap["data"][CONFIG_KEY] == shipped


def test_values_set_the_image_replicas_and_namespace(helm: Path, charted: dict[Key, Obj]) -> None:
    before = _one(charted, "Deployment")
    assert before["spec"]["template"]["spec"]["containers"][0]["image"] == "pyscheduler:0.1.0"

    objects = _template(
        helm,
        "--set",
        "image.repository=registry.example/pyscheduler",
        "--set",
        "image.tag=9.9.9",
        "--set",
        "replicas=3",
        "--set",
        "namespace=schedulers",
    )
    deployment = _one(objects, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.example/pyscheduler:9.9.9"
    assert deployment["spec"]["replicas"] == 3
    namespaced = {ns for (_, kind, ns, _) in objects if kind not in ("Namespace",) and ns}
    assert namespaced == {"schedulers", "kube-system"}, "kube-system: the plugin ConfigMap's Role"
    assert _one(objects, "Namespace")["metadata"]["name"] == "schedulers"
    config = yaml.safe_load(_one(objects, "ConfigMap")["data"][CONFIG_KEY])
    assert config["leaderElection"]["resourceNamespace"] == "schedulers", "the Lease moves along"


def test_a_config_edit_renames_the_configmap_so_the_deployment_rolls(
    helm: Path, charted: dict[Key, Obj], tmp_path: Path
) -> None:
    before = _one(charted, "ConfigMap")["metadata"]["name"]
    edited = (MANIFESTS / "scheduler-config.yaml").read_text(encoding="utf-8")
    edited = edited.replace("  qps: 50\n", "  qps: 80\n")
    assert "qps: 80" in edited
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"config": edited}), encoding="utf-8")

    objects = _template(helm, "--values", str(values))
    configmap = _one(objects, "ConfigMap")
    assert configmap["data"][CONFIG_KEY] == edited
    assert configmap["metadata"]["name"] != before
    assert _config_volume(_one(objects, "Deployment")) == configmap["metadata"]["name"]
    # The same edit through a kustomize overlay gets the same name.
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "scheduler-config.yaml").write_text(edited, encoding="utf-8")
    kustomization = {
        "resources": [os.path.relpath(MANIFESTS, overlay)],
        "configMapGenerator": [
            {
                "name": "pyscheduler-config",
                "namespace": "pyscheduler-system",
                "behavior": "replace",
                "files": [f"{CONFIG_KEY}=scheduler-config.yaml"],
            }
        ],
    }
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization), encoding="utf-8")
    kustomized = _kustomize(overlay)
    assert _one(kustomized, "ConfigMap")["metadata"]["name"] == configmap["metadata"]["name"]


def test_helm_lint_passes(helm: Path) -> None:
    done = subprocess.run(
        [str(helm), "lint", "--strict", str(CHART)],
        capture_output=True,
        text=True,
        timeout=RENDER_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
