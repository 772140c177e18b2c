"""The pure core of NodeVolumeLimits: which CSI volumes a pod attaches, and
whether a node's per-driver attach limits leave room for them.

A volume is identified as upstream by ``<driver>/<volumeHandle>``: a bound
claim's CSI PersistentVolume gives both; an unbound claim (or one whose
volume is missing) counts as a volume of its StorageClass's provisioner with
a handle unique to the claim. Volumes already attached on the node (used by
its pods, or named by a VolumeAttachment to the node) are counted once each
per driver; the pod's volumes that are already attached add nothing.

Not translated (upstream CSI migration): in-tree PersistentVolume sources
and inline in-tree volumes are not counted. Claims of StorageClasses with a
migratable in-tree provisioner count under the CSI driver that replaced it,
as upstream, when the node has a CSINode object.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from scheduler.framework import Pod
from scheduler.framework.volumes import (
    NotFound,
    StorageLister,
    claim_class,
    ephemeral_claim_error,
    pod_claims,
    spec,
)

Raw = Mapping[str, Any]

# In-tree provisioners and the CSI drivers they migrated to (csi-translation-lib).
MIGRATED_DRIVERS = {
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/azure-file": "file.csi.azure.com",
    "kubernetes.io/vsphere-volume": "csi.vsphere.vmware.com",
    "kubernetes.io/portworx-volume": "pxd.portworx.com",
}
# Those for which upstream's ``isCSIMigrationOn`` says yes (given a CSINode).
MIGRATION_ON = frozenset(
    {
        "kubernetes.io/aws-ebs",
        "kubernetes.io/portworx-volume",
        "kubernetes.io/gce-pd",
        "kubernetes.io/azure-disk",
        "kubernetes.io/cinder",
    }
)


class VolumeLookupError(Exception):
    """A claim of the pod being scheduled is missing (UnschedulableAndUnresolvable)
    or not the pod's own ephemeral claim (Error)."""

    def __init__(self, message: str, *, not_found: bool) -> None:
        super().__init__(message)
        self.not_found = not_found


def unique_name(driver: str, handle: str) -> str:
    return f"{driver}/{handle}"


class AttachableVolumes:
    """Resolves pods' claims to ``{unique volume name: driver}``."""

    def __init__(self, lister: StorageLister, volume_id_prefix: str) -> None:
        self._lister = lister
        self._prefix = volume_id_prefix

    def of_pod(
        self, pod: Pod, csi_node: Raw | None, *, new_pod: bool, into: dict[str, str]
    ) -> None:
        """Add the pod's attachable volumes to ``into``. For the pod being
        scheduled a missing claim raises; for pods already placed it is skipped."""
        for ref in pod_claims(pod):
            if not ref.claim:
                raise VolumeLookupError("PersistentVolumeClaim had no name", not_found=False)
            try:
                claim = self._lister.pvc(pod.namespace, ref.claim)
            except NotFound as error:
                if new_pod:
                    raise VolumeLookupError(
                        f"looking up PVC {pod.namespace}/{ref.claim}: {error}", not_found=True
                    ) from None
                continue
            if ref.ephemeral:
                problem = ephemeral_claim_error(pod, claim)
                if problem:
                    raise VolumeLookupError(problem, not_found=False)
            driver, handle = self._driver_info(claim, csi_node)
            if driver and handle:
                into[unique_name(driver, handle)] = driver

    def _driver_info(self, claim: Raw, csi_node: Raw | None) -> tuple[str, str]:
        volume_name = spec(claim).get("volumeName") or ""
        if not volume_name:
            return self._driver_info_from_class(claim, csi_node)
        try:
            pv = self._lister.pv(volume_name)
        except NotFound:
            return self._driver_info_from_class(claim, csi_node)
        csi = spec(pv).get("csi")
        if csi is None:
            return "", ""  # in-tree volume: CSI migration is not translated here
        return str(csi.get("driver") or ""), str(csi.get("volumeHandle") or "")

    def _driver_info_from_class(self, claim: Raw, csi_node: Raw | None) -> tuple[str, str]:
        class_name = claim_class(claim)
        if not class_name:
            return "", ""
        try:
            storage_class = self._lister.storage_class(class_name)
        except NotFound:
            return "", ""
        metadata = claim.get("metadata") or {}
        handle = f"{self._prefix}-{metadata.get('namespace')}/{metadata.get('name')}"
        provisioner = str(storage_class.get("provisioner") or "")
        if provisioner in MIGRATED_DRIVERS:
            if csi_node is None or provisioner not in MIGRATION_ON:
                return "", ""
            return MIGRATED_DRIVERS[provisioner], handle
        return provisioner, handle


def node_limits(csi_node: Raw | None) -> dict[str, int]:
    """Per-driver attach limits from the CSINode's ``allocatable.count``."""
    limits: dict[str, int] = {}
    if csi_node is None:
        return limits
    for driver in spec(csi_node).get("drivers") or ():
        count = (driver.get("allocatable") or {}).get("count")
        if count is not None:
            limits[str(driver.get("name") or "")] = int(count)
    return limits


def attachments_by_node(
    lister: StorageLister, attachments: Iterable[Raw]
) -> dict[str, dict[str, str]]:
    """``node -> {unique volume name: driver}`` from VolumeAttachments whose
    source is a CSI PersistentVolume (upstream ``getNodeVolumeAttachmentInfo``)."""
    result: dict[str, dict[str, str]] = {}
    for attachment in attachments:
        attachment_spec = spec(attachment)
        node = attachment_spec.get("nodeName") or ""
        attacher = attachment_spec.get("attacher") or ""
        pv_name = (attachment_spec.get("source") or {}).get("persistentVolumeName")
        if not node or not attacher or not pv_name:
            continue
        try:
            pv = lister.pv(pv_name)
        except NotFound:
            continue
        csi = spec(pv).get("csi")
        if csi is None:
            continue
        result.setdefault(node, {})[unique_name(attacher, csi.get("volumeHandle") or "")] = attacher
    return result


def exceeds_limits(
    new_volumes: Mapping[str, str],
    attached: Mapping[str, str],
    attachments: Mapping[str, str],
    limits: Mapping[str, int],
) -> bool:
    """Would the new volumes push some driver past its node limit?"""
    attached_count = Counter(attached.values())
    for volume, driver in attachments.items():
        if volume not in attached:
            attached_count[driver] += 1
    new_count = Counter(driver for volume, driver in new_volumes.items() if volume not in attached)
    return any(
        driver in limits and attached_count[driver] + count > limits[driver]
        for driver, count in new_count.items()
    )
