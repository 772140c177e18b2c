"""Resource types the scheduler lists, watches and writes, and their API paths.

A ``ResourceType`` names one REST collection (``group/version/plural``) and
knows how to build its paths. Pure: no I/O. Paths are built from names that
the API server already validated (DNS labels and subdomains), so no escaping
is needed beyond what the HTTP layer does for query strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class ResourceType:
    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` of objects of this type (``v1``, ``resource.k8s.io/v1``)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """``plural.group`` as in RBAC and messages (``resourceclaims.resource.k8s.io``)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def _prefix(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def collection_path(self, namespace: str | None = None) -> str:
        """The collection, across all namespaces when ``namespace`` is None."""
        if namespace is None:
            return f"{self._prefix()}/{self.plural}"
        if not self.namespaced:
            raise ValueError(
                f"{self.group_resource} is cluster-scoped; got namespace {namespace!r}"
            )
        return f"{self._prefix()}/namespaces/{namespace}/{self.plural}"

    def object_path(
        self, name: str, namespace: str | None = None, subresource: str | None = None
    ) -> str:
        if self.namespaced and not namespace:
            raise ValueError(f"{self.group_resource} is namespaced; a namespace is required")
        if not name:
            raise ValueError("an object name is required")
        path = f"{self.collection_path(namespace if self.namespaced else None)}/{name}"
        return f"{path}/{subresource}" if subresource else path


PODS = ResourceType("", "v1", "pods", "Pod", namespaced=True)
NODES = ResourceType("", "v1", "nodes", "Node", namespaced=False)
NAMESPACES = ResourceType("", "v1", "namespaces", "Namespace", namespaced=False)
SERVICES = ResourceType("", "v1", "services", "Service", namespaced=True)
PERSISTENT_VOLUMES = ResourceType("", "v1", "persistentvolumes", "PersistentVolume", False)
PERSISTENT_VOLUME_CLAIMS = ResourceType(
    "", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", namespaced=True
)
REPLICATION_CONTROLLERS = ResourceType(
    "", "v1", "replicationcontrollers", "ReplicationController", namespaced=True
)
REPLICA_SETS = ResourceType("apps", "v1", "replicasets", "ReplicaSet", namespaced=True)
STATEFUL_SETS = ResourceType("apps", "v1", "statefulsets", "StatefulSet", namespaced=True)
STORAGE_CLASSES = ResourceType("storage.k8s.io", "v1", "storageclasses", "StorageClass", False)
CSI_NODES = ResourceType("storage.k8s.io", "v1", "csinodes", "CSINode", namespaced=False)
CSI_DRIVERS = ResourceType("storage.k8s.io", "v1", "csidrivers", "CSIDriver", namespaced=False)
CSI_STORAGE_CAPACITIES = ResourceType(
    "storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", namespaced=True
)
VOLUME_ATTACHMENTS = ResourceType(
    "storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", namespaced=False
)
PRIORITY_CLASSES = ResourceType(
    "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False
)
POD_DISRUPTION_BUDGETS = ResourceType(
    "policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", namespaced=True
)
LEASES = ResourceType("coordination.k8s.io", "v1", "leases", "Lease", namespaced=True)
EVENTS = ResourceType("events.k8s.io", "v1", "events", "Event", namespaced=True)
RESOURCE_CLAIMS = ResourceType("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True)
RESOURCE_CLAIM_TEMPLATES = ResourceType(
    "resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", namespaced=True
)
RESOURCE_SLICES = ResourceType("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False)
DEVICE_CLASSES = ResourceType("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False)
# beta in 1.36 (served only with resource.k8s.io/v1beta2 enabled); watched by
# DynamicResources with the DRADeviceTaintRules gate only
DEVICE_TAINT_RULES = ResourceType(
    "resource.k8s.io", "v1beta2", "devicetaintrules", "DeviceTaintRule", False
)
CONFIG_MAPS = ResourceType("", "v1", "configmaps", "ConfigMap", namespaced=True)
# NeonVM custom resources (AutoscaleEnforcer); JSON only, NeonVM has no protobuf.
VIRTUAL_MACHINES = ResourceType("vm.neon.tech", "v1", "virtualmachines", "VirtualMachine", True)
VIRTUAL_MACHINE_MIGRATIONS = ResourceType(
    "vm.neon.tech", "v1", "virtualmachinemigrations", "VirtualMachineMigration", namespaced=True
)

_ALL = (
    PODS,
    NODES,
    NAMESPACES,
    SERVICES,
    PERSISTENT_VOLUMES,
    PERSISTENT_VOLUME_CLAIMS,
    REPLICATION_CONTROLLERS,
    REPLICA_SETS,
    STATEFUL_SETS,
    STORAGE_CLASSES,
    CSI_NODES,
    CSI_DRIVERS,
    CSI_STORAGE_CAPACITIES,
    VOLUME_ATTACHMENTS,
    PRIORITY_CLASSES,
    POD_DISRUPTION_BUDGETS,
    LEASES,
    EVENTS,
    RESOURCE_CLAIMS,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_SLICES,
    DEVICE_CLASSES,
    DEVICE_TAINT_RULES,
    CONFIG_MAPS,
    VIRTUAL_MACHINES,
    VIRTUAL_MACHINE_MIGRATIONS,
)

# By plural name, as plugins ask for them (``InformerAccess.store("resourceclaims")``).
# Every plural above is unique; core ``events`` are deliberately absent.
KNOWN_RESOURCES: Mapping[str, ResourceType] = MappingProxyType({r.plural: r for r in _ALL})

# By ``group/Kind`` (``Kind`` for the core group), the spelling of the
# framework's cluster-event resources (``storage.k8s.io/CSINode``).
BY_GROUP_KIND: Mapping[str, ResourceType] = MappingProxyType(
    {f"{r.group}/{r.kind}" if r.group else r.kind: r for r in _ALL}
)
