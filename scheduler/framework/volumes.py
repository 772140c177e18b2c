"""Storage objects as the volume plugins read them (upstream
``component-helpers/storage/volume`` and ``ephemeral``), over raw API dicts.

Pure: the objects come from informer stores and are never mutated; copy
before changing one. ``StorageLister`` reads the shared stores of
PersistentVolumeClaims, PersistentVolumes, StorageClasses and CSINodes and
raises ``NotFound`` with the upstream lister message
(``persistentvolumeclaim "x" not found``), which lands in pod status.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework.handle import InformerAccess, ObjectStore
from scheduler.framework.nodeaffinity import parse_node_selector
from scheduler.framework.objects import Pod
from scheduler.framework.quantity import QuantityError, to_units

Raw = Mapping[str, Any]
_EMPTY: Raw = {}

ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
CLAIM_LOST = "Lost"
VOLUME_AVAILABLE = "Available"
STORAGE = "storage"

# Informer resources (plural names) the volume plugins read.
PVCS = "persistentvolumeclaims"
PVS = "persistentvolumes"
STORAGE_CLASSES = "storageclasses"
CSI_NODES = "csinodes"
CSI_DRIVERS = "csidrivers"
CSI_STORAGE_CAPACITIES = "csistoragecapacities"
VOLUME_ATTACHMENTS = "volumeattachments"


class NotFound(LookupError):
    """An object absent from its store; the message is upstream's lister error."""

    def __init__(self, resource: str, name: str) -> None:
        super().__init__(f'{resource} "{name}" not found')


@dataclass(frozen=True, slots=True)
class ClaimRef:
    """One pod volume backed by a claim: ``persistentVolumeClaim`` or ``ephemeral``."""

    volume: str
    claim: str
    ephemeral: bool


def pod_volumes(pod: Pod) -> tuple[Raw, ...]:
    return tuple(pod.spec.get("volumes") or ())


def ephemeral_claim_name(pod: Pod, volume_name: str) -> str:
    """Upstream ``ephemeral.VolumeClaimName``: ``<pod>-<volume>``."""
    return f"{pod.name}-{volume_name}"


def pod_claims(pod: Pod) -> tuple[ClaimRef, ...]:
    """The pod's claim-backed volumes, in spec order."""
    claims = []
    for volume in pod_volumes(pod):
        name = volume.get("name") or ""
        source = volume.get("persistentVolumeClaim")
        if source is not None:
            claims.append(ClaimRef(name, source.get("claimName") or "", ephemeral=False))
        elif volume.get("ephemeral") is not None:
            claims.append(ClaimRef(name, ephemeral_claim_name(pod, name), ephemeral=True))
    return tuple(claims)


def meta(obj: Raw) -> Raw:
    metadata: Raw = obj.get("metadata") or _EMPTY
    return metadata


def spec(obj: Raw) -> Raw:
    value: Raw = obj.get("spec") or _EMPTY
    return value


def name_of(obj: Raw) -> str:
    return str(meta(obj).get("name") or "")


def annotations_of(obj: Raw) -> Raw:
    value: Raw = meta(obj).get("annotations") or _EMPTY
    return value


def resource_version(obj: Raw) -> str:
    return str(meta(obj).get("resourceVersion") or "")


def claim_class(pvc: Raw) -> str:
    """``GetPersistentVolumeClaimClass``: the beta annotation wins over the field."""
    ann = annotations_of(pvc)
    if ANN_BETA_STORAGE_CLASS in ann:
        return str(ann[ANN_BETA_STORAGE_CLASS])
    return str(spec(pvc).get("storageClassName") or "")


def volume_class(pv: Raw) -> str:
    """``GetPersistentVolumeClass``: the beta annotation wins over the field."""
    ann = annotations_of(pv)
    if ANN_BETA_STORAGE_CLASS in ann:
        return str(ann[ANN_BETA_STORAGE_CLASS])
    return str(spec(pv).get("storageClassName") or "")


def is_claim_fully_bound(pvc: Raw) -> bool:
    return bool(spec(pvc).get("volumeName")) and ANN_BIND_COMPLETED in annotations_of(pvc)


def access_modes(obj: Raw) -> tuple[str, ...]:
    return tuple(spec(obj).get("accessModes") or ())


def storage_request(pvc: Raw) -> int:
    """The claim's requested bytes (0 when absent); raises ``QuantityError``."""
    requests = (spec(pvc).get("resources") or _EMPTY).get("requests") or _EMPTY
    value = requests.get(STORAGE)
    return 0 if value is None else to_units(str(value))


def storage_capacity(pv: Raw) -> int:
    capacity = spec(pv).get("capacity") or _EMPTY
    value = capacity.get(STORAGE)
    try:
        return 0 if value is None else to_units(str(value))
    except QuantityError:
        return 0


def pv_node_affinity_matches(pv: Raw, node_labels: Mapping[str, str]) -> bool:
    """``volume.CheckNodeAffinity``: only ``required`` terms are checked, against
    a node that has only labels (as upstream: match fields are skipped)."""
    required = (spec(pv).get("nodeAffinity") or _EMPTY).get("required")
    if required is None:
        return True
    return parse_node_selector(required).matches("", node_labels)


def topology_selector_terms_match(terms: Iterable[Raw], labels: Mapping[str, str]) -> bool:
    """``v1helper.MatchTopologySelectorTerms`` (a StorageClass's
    ``allowedTopologies``): no terms allow every node; a term matches when each
    of its expressions has the label with a listed value; an empty term, or one
    with an expression without values, matches nothing."""
    terms = tuple(terms)
    if not terms:
        return True
    for term in terms:
        expressions = term.get("matchLabelExpressions") or ()
        if expressions and all(
            (values := expression.get("values") or ())
            and labels.get(expression.get("key") or "") in values
            for expression in expressions
        ):
            return True
    return False


def is_volume_bound_to_claim(pv: Raw, pvc: Raw) -> bool:
    ref = spec(pv).get("claimRef")
    if ref is None:
        return False
    pvc_meta = meta(pvc)
    if ref.get("name") != pvc_meta.get("name") or ref.get("namespace") != pvc_meta.get("namespace"):
        return False
    uid = ref.get("uid") or ""
    return not uid or uid == pvc_meta.get("uid")


def ephemeral_claim_error(pod: Pod, pvc: Raw) -> str:
    """Upstream ``ephemeral.VolumeIsForPod``: "" when the pod owns the claim."""
    pvc_meta = meta(pvc)
    owned = any(
        ref.get("controller") and ref.get("uid") == pod.uid
        for ref in pvc_meta.get("ownerReferences") or ()
    )
    if pvc_meta.get("namespace") != pod.namespace or not owned:
        return (
            f"PVC {pvc_meta.get('namespace')}/{pvc_meta.get('name')} was not created for pod "
            f"{pod.namespace}/{pod.name} (pod is not owner)"
        )
    return ""


class StorageLister:
    """Typed reads of the shared storage stores, with upstream NotFound messages.

    The stores of ``resources`` are opened when the lister is built (in the
    plugin's factory, before the informers start), so that the scheduler
    waits for their initial lists before its first cycle; a store first
    asked for later would be empty until its informer syncs."""

    def __init__(self, informers: InformerAccess, resources: Iterable[str] = ()) -> None:
        self._informers = informers
        self._stores: dict[str, ObjectStore] = {}
        for resource in resources:
            self.store(resource)

    def store(self, resource: str) -> ObjectStore:
        store = self._stores.get(resource)
        if store is None:
            store = self._stores[resource] = self._informers.store(resource)
        return store

    def pvc(self, namespace: str, name: str) -> Raw:
        obj = self.store(PVCS).get(f"{namespace}/{name}")
        if obj is None:
            raise NotFound("persistentvolumeclaim", name)
        return obj

    def pv(self, name: str) -> Raw:
        obj = self.store(PVS).get(name)
        if obj is None:
            raise NotFound("persistentvolume", name)
        return obj

    def storage_class(self, name: str) -> Raw:
        obj = self.store(STORAGE_CLASSES).get(name)
        if obj is None:
            raise NotFound("storageclass", name)
        return obj

    def csi_node(self, name: str) -> Raw | None:
        return self.store(CSI_NODES).get(name)

    def csi_driver(self, name: str) -> Raw | None:
        return self.store(CSI_DRIVERS).get(name)

    def pvs(self) -> Iterable[Raw]:
        return self.store(PVS).list()

    def list(self, resource: str) -> Iterable[Raw]:
        return self.store(resource).list()

    def is_delay_binding(self, pvc: Raw) -> bool:
        """``volume.IsDelayBindingMode``: the claim's class binds on first consumer.
        A missing class is not delay binding; a class without a binding mode
        raises ``ValueError`` (upstream's error)."""
        class_name = claim_class(pvc)
        if not class_name:
            return False
        obj = self.store(STORAGE_CLASSES).get(class_name)
        if obj is None:
            return False
        mode = obj.get("volumeBindingMode")
        if mode is None:
            raise ValueError(f'VolumeBindingMode not set for StorageClass "{class_name}"')
        return bool(mode == WAIT_FOR_FIRST_CONSUMER)
