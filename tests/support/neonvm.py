"""Install our minimal NeonVM CRDs (``neonvm-crds.yaml``) into a test cluster,
and write the AutoscaleEnforcer's configuration document (``enforcer_config``).

Idempotent: an existing definition is kept. Returns once both kinds are
Established and served, so a VirtualMachine can be created right after.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import yaml
from kubernetes_asyncio import client

from tests.support.kubeapi import read_json
from tests.support.wait import eventually

CRDS = Path(__file__).with_name("neonvm-crds.yaml")
GROUP, VERSION = "vm.neon.tech", "v1"


def crds() -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(CRDS.read_text()) if doc]


async def install_neonvm_crds(kube: client.ApiClient) -> None:
    extensions = client.ApiextensionsV1Api(kube)
    for crd in crds():
        try:
            await extensions.create_custom_resource_definition(crd)
        except client.ApiException as error:
            if error.status != 409:
                raise
    custom = client.CustomObjectsApi(kube)

    async def served() -> bool:
        for crd in crds():
            raw = await read_json(
                await extensions.read_custom_resource_definition(
                    crd["metadata"]["name"], _preload_content=False
                )
            )
            conditions = {
                c["type"]: c["status"] for c in (raw.get("status") or {}).get("conditions") or []
            }
            if conditions.get("Established") != "True":
                return False
        try:
            await custom.list_cluster_custom_object(GROUP, VERSION, "virtualmachines")
        except client.ApiException:
            return False
        return True

    await eventually(served, timeout=30, what="NeonVM CRDs served")


def enforcer_config(name: str, *, watermark: float = 0.9, **extra: Any) -> str:
    """The AutoscaleEnforcer's JSON configuration for scheduler ``name``: one
    vCPU / 1 GiB compute unit, 1Gi memory blocks, no migration, ``watermark``
    for CPU and memory, plus ``extra`` top-level keys."""
    return orjson.dumps(
        {
            "nodeDefaults": {
                "cpu": {"watermark": watermark, "system": "0"},
                "memory": {"watermark": watermark, "system": "0"},
                "computeUnit": {"vCPUs": 1, "mem": 1},
            },
            "memBlockSize": "1Gi",
            "schedulerName": name,
            "doMigration": False,
            **extra,
        }
    ).decode()
