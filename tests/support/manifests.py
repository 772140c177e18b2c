"""Read the deployment manifests in ``manifests/`` as plain dicts.

Pure file reading, no cluster and no kustomize binary: the base is the list of
files named by ``manifests/kustomization.yaml``, in order, then the ConfigMaps
of its ``configMapGenerator`` under their base names (kustomize adds a hash of
the content to the name and rewrites the references; here the Deployment's
reference already is the base name). Shared by the unit
checks (the manifests agree with each other and with the code) and the
integration tests (the API server accepts them and the RBAC suffices).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
MANIFESTS = REPO_ROOT / "manifests"
MONITORING = MANIFESTS / "monitoring"
KUSTOMIZATION = "kustomization.yaml"
CONFIG_KEY = "config.yaml"

Obj = dict[str, Any]


def yaml_files(root: Path = MANIFESTS) -> list[Path]:
    """Every YAML file under ``root``, recursively, sorted."""
    return sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml"))


def documents(path: Path) -> list[Obj]:
    """The non-empty YAML documents of one file."""
    with path.open(encoding="utf-8") as stream:
        return [doc for doc in yaml.safe_load_all(stream) if doc is not None]


def kustomization(folder: Path = MANIFESTS) -> Obj:
    (doc,) = documents(folder / KUSTOMIZATION)
    return doc


def generator_sources(folder: Path = MANIFESTS) -> set[str]:
    """The files a kustomization's ``configMapGenerator`` reads (data, not objects)."""
    return {
        entry.split("=", 1)[-1]
        for generator in kustomization(folder).get("configMapGenerator") or ()
        for entry in generator.get("files") or ()
    }


def generated_configmaps(folder: Path = MANIFESTS) -> list[Obj]:
    """The ConfigMaps of a kustomization's ``configMapGenerator``, unhashed."""
    made = []
    for generator in kustomization(folder).get("configMapGenerator") or ():
        data = {}
        for entry in generator.get("files") or ():
            key, _, source = entry.rpartition("=")
            data[key or Path(source).name] = (folder / source).read_text(encoding="utf-8")
        metadata = {"name": generator["name"], "namespace": generator["namespace"]}
        labels = (generator.get("options") or {}).get("labels")
        if labels:
            metadata["labels"] = dict(labels)
        made.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data})
    return made


def unhashed(obj: Obj, folder: Path = MANIFESTS) -> tuple[str, str]:
    """(kind, name) of a built object, a generated ConfigMap under its base
    name (kustomize's ``<name>-<10-character hash>``)."""
    name: str = obj["metadata"]["name"]
    if obj["kind"] == "ConfigMap":
        for generator in kustomization(folder).get("configMapGenerator") or ():
            base = generator["name"]
            if name.startswith(base + "-") and len(name) == len(base) + 11:
                return "ConfigMap", base
    return obj["kind"], name


def resources(folder: Path = MANIFESTS) -> list[Obj]:
    """The objects of a kustomization's ``resources`` files, in order, then
    the generated ConfigMaps."""
    listed = [
        doc for name in kustomization(folder)["resources"] for doc in documents(folder / name)
    ]
    return listed + generated_configmaps(folder)


def find(objects: Iterable[Obj], kind: str, name: str | None = None) -> Obj:
    """The one object of ``kind`` (and ``name``); fails loudly otherwise."""
    found = [
        o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)
    ]
    if len(found) != 1:
        raise LookupError(f"expected one {kind} {name or ''}, found {len(found)}")
    return found[0]


def containers(deployment: Obj) -> Iterator[Obj]:
    yield from deployment["spec"]["template"]["spec"]["containers"]


def scheduler_container(deployment: Obj) -> Obj:
    (container,) = containers(deployment)
    return container


def shipped_config_text(objects: Iterable[Obj]) -> str:
    """The KubeSchedulerConfiguration embedded in the base's ConfigMap."""
    configmap = find(objects, "ConfigMap")
    text: str = configmap["data"][CONFIG_KEY]
    return text
