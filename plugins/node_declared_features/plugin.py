"""NodeDeclaredFeatures: PreFilter and Filter over ``node.status.declaredFeatures``.

Upstream ``pkg/scheduler/framework/plugins/nodedeclaredfeatures`` (feature
gate NodeDeclaredFeatures: beta and on by default in 1.36, so the plugin is
appended to the default profile) with the feature registry of
``k8s.io/component-helpers/nodedeclaredfeatures`` v0.36. Of its features
only two are inferred for scheduling a new pod:

- ``RestartAllContainersOnContainerExits``: a container or init container has
  a ``restartPolicyRules`` entry with action ``RestartAllContainers``;
- ``UserNamespacesHostNetworkSupport``: ``hostNetwork`` with
  ``hostUsers: false``.

The others (in-place resize of pod-level resources or of init containers,
WebSockets to the kubelet) matter only for updates. PreFilter skips pods that
need no feature; Filter rejects a node that does not declare every needed
feature: UnschedulableAndUnresolvable ``node(s) didn't match Pod's required
features``. Queueing: a node added or changing its declared features, or a
change of the pod's own requirements.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    EnqueueExtensions,
    EventResource,
    FilterPlugin,
    Handle,
    Node,
    NodeInfo,
    Pod,
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
    SignPlugin,
    Status,
)

NAME = "NodeDeclaredFeatures"
REASON = "node(s) didn't match Pod's required features"

RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
_RESTART_ALL_ACTION = "RestartAllContainers"


def required_features(pod: Pod) -> frozenset[str]:
    """The declared features scheduling this pod needs (upstream
    ``InferForPodScheduling`` over the v0.36 registry)."""
    spec = pod.spec
    needed: set[str] = set()
    for container in (*(spec.get("containers") or ()), *(spec.get("initContainers") or ())):
        if any(
            rule.get("action") == _RESTART_ALL_ACTION
            for rule in container.get("restartPolicyRules") or ()
        ):
            needed.add(RESTART_ALL_CONTAINERS)
            break
    if spec.get("hostNetwork") and spec.get("hostUsers") is False:
        needed.add(USER_NAMESPACES_HOST_NETWORK)
    return frozenset(needed)


class NodeDeclaredFeatures(PreFilterPlugin, FilterPlugin, SignPlugin, EnqueueExtensions):
    name = NAME

    def sign_pod(self, pod: Pod) -> Hashable:
        """Node-local: the result for a node depends only on the needed features."""
        return required_features(pod)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE
                ),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE),
                self.is_schedulable_after_pod_update,
            ),
        ]

    def is_schedulable_after_node_change(
        self, pod: Pod, old: Node | None, new: Node | None
    ) -> QueueingHint:
        if new is None:
            return QueueingHint.QUEUE_SKIP
        if old is not None and _declared(old) == _declared(new):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_pod_update(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        if new is None or old is None or new.uid != pod.uid:
            return QueueingHint.QUEUE_SKIP
        if required_features(old) == required_features(new):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not required_features(pod):
            return None, Status.skip()
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status.as_error("node not found")
        if required_features(pod) <= node.declared_features:
            return None
        return Status.unresolvable(REASON)


def _declared(node: Node) -> tuple[str, ...]:
    # Upstream compares the lists as they are (slices.Equal): order matters.
    return tuple((node.raw.get("status") or {}).get("declaredFeatures") or ())


def new(args: object, handle: Handle) -> NodeDeclaredFeatures:
    return NodeDeclaredFeatures()
