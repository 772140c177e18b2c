"""The pure core of VolumeBinding (upstream ``volumeBinder``), without I/O.

- ``pod_has_claims`` / ``pod_volume_claims`` (PreFilter): classify the pod's
  claims into bound, unbound with delayed binding (WaitForFirstConsumer) and
  unbound immediate ones, and gather the candidate volumes per class.
- ``find_pod_volumes`` (Filter, per node): bound claims' volumes must allow
  the node; each delayed claim either has a matching available volume
  (static binding: the smallest that fits, never one chosen for another claim
  of the pod) or can be provisioned there (class provisioner, allowed
  topologies, CSI storage capacity when the driver publishes it). A claim
  already annotated with a selected node fits only that node.
- ``assume_pod_volumes`` / ``revert`` (Reserve/Unreserve): record the
  bindings in the assume caches, so later cycles see the volumes taken.
- ``check_bindings`` (PreBind's wait): are the API objects fully bound yet?

Missing objects produce upstream's messages; reasons are upstream's strings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from plugins.volume_binding.assume import AssumeCache, AssumeError
from plugins.volume_binding.matching import (
    MatchError,
    bind_volume_to_claim,
    claim_key,
    find_matching_volume,
    requested_bytes,
    with_annotation,
)
from scheduler.framework import Node, Pod, QuantityError
from scheduler.framework.labels import LabelSelectorError, parse_label_selector
from scheduler.framework.volumes import (
    ANN_SELECTED_NODE,
    CLAIM_LOST,
    CSI_STORAGE_CAPACITIES,
    NOT_SUPPORTED_PROVISIONER,
    NotFound,
    StorageLister,
    annotations_of,
    claim_class,
    ephemeral_claim_error,
    is_claim_fully_bound,
    meta,
    name_of,
    pod_claims,
    pv_node_affinity_matches,
    resource_version,
    spec,
    storage_request,
    topology_selector_terms_match,
    volume_class,
)

Raw = Mapping[str, Any]

REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


class ClaimError(Exception):
    """The pod can't use its claims as they are (UnschedulableAndUnresolvable)."""


class BindingError(Exception):
    """Something went wrong that makes the attempt an Error."""


@dataclass(frozen=True, slots=True)
class PodVolumeClaims:
    bound: tuple[Raw, ...] = ()
    unbound_delay_binding: tuple[Raw, ...] = ()
    unbound_immediate: tuple[Raw, ...] = ()
    # class name -> candidate volumes for the delayed claims of that class
    volumes_by_class: Mapping[str, tuple[Raw, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StaticBinding:
    pvc: Raw
    pv: Raw


@dataclass(frozen=True, slots=True)
class DynamicProvision:
    pvc: Raw
    capacity: Raw | None = None


@dataclass(frozen=True, slots=True)
class PodVolumes:
    static_bindings: tuple[StaticBinding, ...] = ()
    dynamic_provisions: tuple[DynamicProvision, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.static_bindings and not self.dynamic_provisions


def compare_versions(a: Raw, b: Raw) -> int:
    """Upstream ``CompareResourceVersion``: resource versions as integers."""
    try:
        left, right = int(resource_version(a)), int(resource_version(b))
    except ValueError:
        return 0
    return (left > right) - (left < right)


class VolumeBinder:
    def __init__(self, lister: StorageLister, pvs: AssumeCache, pvcs: AssumeCache) -> None:
        self._lister = lister
        self._pvs = pvs
        self._pvcs = pvcs

    # ------------------------------------------------------------- PreFilter
    def pod_has_claims(self, pod: Pod) -> bool:
        """Upstream ``podHasPVCs`` over the informer's claims; raises ClaimError."""
        claims = pod_claims(pod)
        for ref in claims:
            try:
                claim = self._lister.pvc(pod.namespace, ref.claim)
            except NotFound as error:
                if ref.ephemeral:
                    raise ClaimError(
                        "waiting for ephemeral volume controller to create the "
                        f'persistentvolumeclaim "{ref.claim}"'
                    ) from None
                raise ClaimError(str(error)) from None
            if (claim.get("status") or {}).get("phase") == CLAIM_LOST:
                raise ClaimError(
                    f'persistentvolumeclaim "{ref.claim}" bound to non-existent '
                    f'persistentvolume "{spec(claim).get("volumeName") or ""}"'
                )
            if meta(claim).get("deletionTimestamp"):
                raise ClaimError(f'persistentvolumeclaim "{ref.claim}" is being deleted')
            if ref.ephemeral:
                problem = ephemeral_claim_error(pod, claim)
                if problem:
                    raise ClaimError(problem)
        return bool(claims)

    def pod_volume_claims(self, pod: Pod) -> PodVolumeClaims:
        """Upstream ``GetPodVolumeClaims``; raises BindingError."""
        bound: list[Raw] = []
        delayed: list[Raw] = []
        immediate: list[Raw] = []
        for ref in pod_claims(pod):
            key = f"{pod.namespace}/{ref.claim}"
            claim = self._pvcs.get(key)
            if claim is None:
                raise BindingError(f'error getting PVC "{key}": {self._pvcs.not_found(key)}')
            if ref.ephemeral and (problem := ephemeral_claim_error(pod, claim)):
                raise BindingError(problem)
            if is_claim_fully_bound(claim):
                bound.append(claim)
                continue
            try:
                delay = self._lister.is_delay_binding(claim)
            except ValueError as error:
                raise BindingError(str(error)) from None
            if delay and not spec(claim).get("volumeName"):
                delayed.append(claim)
            else:
                immediate.append(claim)
        volumes_by_class: dict[str, tuple[Raw, ...]] = {}
        if delayed:
            wanted = {claim_class(claim) for claim in delayed}
            grouped: dict[str, list[Raw]] = {name: [] for name in wanted}
            for pv in self._pvs.list():
                pv_class = volume_class(pv)
                if pv_class in grouped:
                    grouped[pv_class].append(pv)
            volumes_by_class = {name: tuple(pvs) for name, pvs in grouped.items()}
        return PodVolumeClaims(tuple(bound), tuple(delayed), tuple(immediate), volumes_by_class)

    # ---------------------------------------------------------------- Filter
    def find_pod_volumes(
        self, pod: Pod, claims: PodVolumeClaims, node: Node
    ) -> tuple[PodVolumes, tuple[str, ...]]:
        """Upstream ``FindPodVolumes``: what the pod's claims need on ``node``,
        and the reasons it can't have it there. Raises BindingError."""
        bound_ok, pvs_found = True, True
        unbound_ok, enough_storage = True, True
        bindings: tuple[StaticBinding, ...] = ()
        provisions: tuple[DynamicProvision, ...] = ()
        if claims.bound:
            bound_ok, pvs_found = self._check_bound_claims(claims.bound, node)
        if claims.unbound_delay_binding:
            to_match: list[Raw] = []
            to_provision: list[Raw] = []
            for claim in claims.unbound_delay_binding:
                selected = annotations_of(claim).get(ANN_SELECTED_NODE)
                if selected is None:
                    to_match.append(claim)
                elif selected != node.name:
                    unbound_ok = False
                    break
                else:
                    to_provision.append(claim)
            if unbound_ok:
                if to_match:
                    unbound_ok, bindings, unmatched = self._find_matching_volumes(
                        to_match, claims.volumes_by_class, node
                    )
                    to_provision.extend(unmatched)
                if to_provision:
                    unbound_ok, enough_storage, provisions = self._check_provisions(
                        to_provision, node
                    )
        reasons = []
        if not bound_ok:
            reasons.append(REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(REASON_BIND_CONFLICT)
        if not enough_storage:
            reasons.append(REASON_NOT_ENOUGH_SPACE)
        if not pvs_found:
            reasons.append(REASON_PV_NOT_EXIST)
        return PodVolumes(bindings, provisions), tuple(reasons)

    def _check_bound_claims(self, claims: Sequence[Raw], node: Node) -> tuple[bool, bool]:
        """(node affinity satisfied, every volume found)."""
        for claim in claims:
            pv = self._pvs.get(str(spec(claim).get("volumeName") or ""))
            if pv is None:
                return True, False
            if not pv_node_affinity_matches(pv, node.labels):
                return False, True
        return True, True

    def _find_matching_volumes(
        self, claims: Sequence[Raw], volumes_by_class: Mapping[str, Sequence[Raw]], node: Node
    ) -> tuple[bool, tuple[StaticBinding, ...], list[Raw]]:
        chosen: set[str] = set()
        bindings: list[StaticBinding] = []
        unmatched: list[Raw] = []
        for claim in sorted(claims, key=requested_bytes):
            try:
                pv = find_matching_volume(
                    claim, volumes_by_class.get(claim_class(claim), ()), node, chosen
                )
            except MatchError as error:
                raise BindingError(str(error)) from None
            if pv is None:
                unmatched.append(claim)
                continue
            chosen.add(name_of(pv))
            bindings.append(StaticBinding(pvc=claim, pv=pv))
        return not unmatched, tuple(bindings), unmatched

    def _check_provisions(
        self, claims: Sequence[Raw], node: Node
    ) -> tuple[bool, bool, tuple[DynamicProvision, ...]]:
        """(provisioning possible, enough storage, the provisions)."""
        provisions: list[DynamicProvision] = []
        for claim in claims:
            class_name = claim_class(claim)
            if not class_name:
                raise BindingError(f'no class for claim "{claim_key(claim)}"')
            try:
                storage_class = self._lister.storage_class(class_name)
            except NotFound:
                raise BindingError(f'failed to find storage class "{class_name}"') from None
            provisioner = str(storage_class.get("provisioner") or "")
            if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
                return False, True, ()
            if not topology_selector_terms_match(
                storage_class.get("allowedTopologies") or (), node.labels
            ):
                return False, True, ()
            sufficient, capacity = self._has_enough_capacity(provisioner, claim, class_name, node)
            if not sufficient:
                return True, False, ()
            provisions.append(DynamicProvision(pvc=claim, capacity=capacity))
        return True, True, tuple(provisions)

    def _has_enough_capacity(
        self, provisioner: str, claim: Raw, class_name: str, node: Node
    ) -> tuple[bool, Raw | None]:
        requests = (spec(claim).get("resources") or {}).get("requests") or {}
        if "storage" not in requests:
            return True, None
        driver = self._lister.csi_driver(provisioner)
        if driver is None or not spec(driver).get("storageCapacity"):
            return True, None
        size = requested_bytes(claim)
        for capacity in self._lister.list(CSI_STORAGE_CAPACITIES):
            if (
                capacity.get("storageClassName") == class_name
                and _capacity_sufficient(capacity, size)
                and _node_has_access(capacity, node)
            ):
                return True, capacity
        return False, None

    # ------------------------------------------------------- Reserve/Unreserve
    def all_bound(self, pod: Pod) -> bool:
        """Upstream ``arePodVolumesBound`` (through the assume cache)."""
        for ref in pod_claims(pod):
            claim = self._pvcs.get(f"{pod.namespace}/{ref.claim}")
            if claim is None or not is_claim_fully_bound(claim):
                return False
        return True

    def assume_pod_volumes(
        self, pod: Pod, node_name: str, volumes: PodVolumes
    ) -> tuple[bool, PodVolumes]:
        """Upstream ``AssumePodVolumes``: (all bound already, the assumed volumes).
        Raises BindingError, with nothing left assumed."""
        if self.all_bound(pod):
            return True, volumes
        bindings: list[StaticBinding] = []
        provisions: list[DynamicProvision] = []
        try:
            for binding in volumes.static_bindings:
                pv, dirty = bind_volume_to_claim(binding.pv, binding.pvc)
                if dirty:
                    self._pvs.assume(pv)
                bindings.append(StaticBinding(pvc=binding.pvc, pv=pv))
            for provision in volumes.dynamic_provisions:
                claim = with_annotation(provision.pvc, ANN_SELECTED_NODE, node_name)
                self._pvcs.assume(claim)
                provisions.append(DynamicProvision(pvc=claim, capacity=provision.capacity))
        except AssumeError as error:
            self.revert(PodVolumes(tuple(bindings), tuple(provisions)))
            raise BindingError(str(error)) from None
        return False, PodVolumes(tuple(bindings), tuple(provisions))

    def revert(self, volumes: PodVolumes) -> None:
        for binding in volumes.static_bindings:
            self._pvs.restore(binding.pv)
        for provision in volumes.dynamic_provisions:
            self._pvcs.restore(provision.pvc)

    # --------------------------------------------------------- PreBind's wait
    def check_bindings(self, pod: Pod, node: Node, volumes: PodVolumes, pod_exists: bool) -> bool:
        """Upstream ``checkBindings``: True when every claim is fully bound as
        decided; False to keep waiting; BindingError when it can't happen."""
        if not pod_exists:
            raise BindingError(f'pod does not exist any more: pods "{pod.name}" not found')
        for binding in volumes.static_bindings:
            pv_name = name_of(binding.pv)
            pv = self._pvs.get_api_object(pv_name)
            if pv is None:
                raise BindingError(f"failed to check binding: {self._pvs.not_found(pv_name)}")
            key = claim_key(binding.pvc)
            claim = self._pvcs.get_api_object(key)
            if claim is None:
                raise BindingError(f"failed to check binding: {self._pvcs.not_found(key)}")
            if compare_versions(binding.pv, pv) > 0:
                return False  # the informer has not seen our write yet
            if not pv_node_affinity_matches(pv, node.labels):
                raise BindingError(
                    f'pv "{pv_name}" node affinity doesn\'t match node "{node.name}": '
                    "no matching NodeSelectorTerms"
                )
            claim_ref = spec(pv).get("claimRef")
            if claim_ref is None or not claim_ref.get("uid"):
                raise BindingError(f'ClaimRef got reset for pv "{pv_name}"')
            if not is_claim_fully_bound(claim):
                return False
        for provision in volumes.dynamic_provisions:
            key = claim_key(provision.pvc)
            claim = self._pvcs.get_api_object(key)
            if claim is None:
                raise BindingError(f"failed to check provisioning pvc: {self._pvcs.not_found(key)}")
            if compare_versions(provision.pvc, claim) > 0:
                return False
            claim_name = name_of(claim)
            if not meta(claim).get("annotations"):
                raise BindingError(f'selectedNode annotation reset for PVC "{claim_name}"')
            if annotations_of(claim).get(ANN_SELECTED_NODE) != node.name:
                raise BindingError(f'provisioning failed for PVC "{claim_name}"')
            volume_name = str(spec(claim).get("volumeName") or "")
            if volume_name:
                pv = self._pvs.get_api_object(volume_name)
                if pv is None:
                    return False
                if not pv_node_affinity_matches(pv, node.labels):
                    raise BindingError(
                        f'pv "{volume_name}" node affinity doesn\'t match node "{node.name}": '
                        "no matching NodeSelectorTerms"
                    )
            if not is_claim_fully_bound(claim):
                return False
        return True


def _capacity_sufficient(capacity: Raw, size: int) -> bool:
    limit = capacity.get("maximumVolumeSize")
    if limit is None:
        limit = capacity.get("capacity")
    if limit is None:
        return False
    try:
        return storage_request({"spec": {"resources": {"requests": {"storage": limit}}}}) >= size
    except QuantityError:
        return False


def _node_has_access(capacity: Raw, node: Node) -> bool:
    topology = capacity.get("nodeTopology")
    if topology is None:
        return False
    try:
        return parse_label_selector(topology).matches(node.labels)
    except LabelSelectorError:
        return False
