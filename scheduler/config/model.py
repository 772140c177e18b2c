"""KubeSchedulerConfiguration ``kubescheduler.config.k8s.io/v1`` as pydantic models.

Fields are camelCase in YAML (aliases only: snake_case keys are unknown
fields, as upstream's strict decoding would say) and snake_case in Python.
Defaults are upstream's (``pkg/scheduler/apis/config/v1/defaults.go``) except
the scheduler name and the leader-election lock name, both ``pyscheduler``.
As upstream, ``null`` means "not set", and a zero qps, burst, content type,
lease duration, lock type or lock name means "use the default".

Invariants of a validated ``SchedulerConfiguration``: at least one profile; a
single profile without a name is named ``DEFAULT_SCHEDULER_NAME``; names are
non-empty and unique; no extenders. What needs the plugin registry (plugin
names, extension points, plugin args) is checked by ``resolve_profiles``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from scheduler.config.errors import FieldProblems, Problem
from scheduler.framework.durations import MAX_DURATION_SECONDS, format_duration, parse_duration
from scheduler.framework.interfaces import EXTENSION_POINT_CLASSES, ExtensionPoint
from scheduler.kube.protobuf import PROTOBUF

API_GROUP = "kubescheduler.config.k8s.io"
API_VERSION = f"{API_GROUP}/v1"
KIND = "KubeSchedulerConfiguration"

DEFAULT_SCHEDULER_NAME = "pyscheduler"
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 0  # adaptive
DEFAULT_PARALLELISM = 16
DEFAULT_POD_INITIAL_BACKOFF_SECONDS = 1
DEFAULT_POD_MAX_BACKOFF_SECONDS = 10
DEFAULT_QPS = 50.0
DEFAULT_BURST = 100
# Upstream's default. With it, the two writes made per bound pod (the binding
# and its event) go as protobuf, which the API server decodes more cheaply;
# everything else, reads and watches included, is JSON. "application/json"
# makes every request JSON.
JSON_CONTENT_TYPE = "application/json"
PROTOBUF_CONTENT_TYPE = PROTOBUF
DEFAULT_CONTENT_TYPE = PROTOBUF_CONTENT_TYPE
CONTENT_TYPES = (PROTOBUF_CONTENT_TYPE, JSON_CONTENT_TYPE)
DEFAULT_LEASE_DURATION = 15.0
DEFAULT_RENEW_DEADLINE = 10.0
DEFAULT_RETRY_PERIOD = 2.0
LEASES_RESOURCE_LOCK = "leases"
DEFAULT_LEADER_ELECTION_RESOURCE_NAME = "pyscheduler"
DEFAULT_LEADER_ELECTION_NAMESPACE = "kube-system"
# client-go's leader elector needs renewDeadline > JitterFactor * retryPeriod.
LEADER_ELECTION_JITTER_FACTOR = 1.2

# The YAML key of the plugin set expanded to every extension point.
MULTI_POINT_KEY = "multiPoint"
# Disables every default plugin of an extension point in a ``disabled`` list.
ALL_PLUGINS = "*"

# The extension points a profile configures, in lifecycle order.
CONFIGURABLE_POINTS: tuple[ExtensionPoint, ...] = tuple(EXTENSION_POINT_CLASSES)


def point_key(point: ExtensionPoint) -> str:
    """The YAML key of an extension point's plugin set: ``preEnqueue``."""
    return point.value[0].lower() + point.value[1:]


def _point_attribute(point: ExtensionPoint) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", point.value).lower()


def _check(predicate: Callable[[Any], bool], message: str) -> AfterValidator:
    def validate(value: Any) -> Any:
        if not predicate(value):
            raise ValueError(message)
        return value

    return AfterValidator(validate)


def _duration(value: Any) -> Any:
    if not isinstance(value, str):
        raise ValueError(f"must be a duration string such as '15s', got {value!r}")
    return parse_duration(value)


_FLOAT32_MAX = 3.4028234663852886e38
_INT32_MAX = 2**31 - 1
# Upstream multiplies the seconds by time.Second into a time.Duration (int64
# nanoseconds); a larger value would wrap there, so it is refused here.
_MAX_BACKOFF_SECONDS = int(MAX_DURATION_SECONDS)
BackoffSeconds = Annotated[
    StrictInt,
    _check(lambda v: v <= _MAX_BACKOFF_SECONDS, f"must be at most {_MAX_BACKOFF_SECONDS}"),
]

Percentage = Annotated[
    StrictInt, _check(lambda v: 0 <= v <= 100, "must be in the range 0..100 (0 means adaptive)")
]
# Read from and written back (``/configz``) as Go duration strings: ``15s``.
Duration = Annotated[
    float, BeforeValidator(_duration), PlainSerializer(format_duration, when_used="json")
]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_unset(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if value is not None}
        return data


def _drop_zero(data: Any, zero_means_default: dict[str, Callable[[Any], bool]]) -> Any:
    if not isinstance(data, dict):
        return data
    return {
        key: value
        for key, value in data.items()
        if not (key in zero_means_default and zero_means_default[key](value))
    }


def _is_zero_duration(value: Any) -> bool:
    try:
        return isinstance(value, str) and parse_duration(value) == 0
    except ValueError:
        return False


def _is_zero_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and value == 0


def _is_empty(value: Any) -> bool:
    return isinstance(value, str) and not value


def _known_content_type(value: str) -> str:
    if value not in CONTENT_TYPES:
        raise ValueError(
            f"{value!r} is not supported: pyscheduler sends {' or '.join(map(repr, CONTENT_TYPES))}"
        )
    return value


def _json_accepted(value: str) -> str:
    if value and value != JSON_CONTENT_TYPE:
        raise ValueError(
            f"{value!r} is not supported: pyscheduler accepts {JSON_CONTENT_TYPE!r} only"
            " (leave it empty)"
        )
    return value


def _refused(reason: str, *, allowed: object = False) -> AfterValidator:
    """A field we cannot honour: any value but ``allowed`` (what we run with) is
    refused with ``reason``. A field set to null counts as unset."""

    def validate(value: Any) -> Any:
        if value != allowed or type(value) is not type(allowed):
            raise ValueError(f"not supported: {reason}")
        return value

    return AfterValidator(validate)


class ClientConnection(_Model):
    kubeconfig: StrictStr = ""
    accept_content_types: Annotated[StrictStr, AfterValidator(_json_accepted)] = ""
    content_type: Annotated[StrictStr, AfterValidator(_known_content_type)] = DEFAULT_CONTENT_TYPE
    # Upstream's fields are float32 and int32: its decoder refuses wider values.
    qps: Annotated[
        StrictFloat,
        _check(lambda v: math.isfinite(v) and v <= _FLOAT32_MAX, "must be a finite float32"),
        _check(lambda v: v > 0, "must be > 0"),
    ] = DEFAULT_QPS
    burst: Annotated[
        StrictInt,
        _check(lambda v: v <= _INT32_MAX, f"must be at most {_INT32_MAX}"),
        _check(lambda v: v >= 1, "must be >= 1"),
    ] = DEFAULT_BURST

    @model_validator(mode="before")
    @classmethod
    def _zero_is_default(cls, data: Any) -> Any:
        return _drop_zero(
            data, {"qps": _is_zero_number, "burst": _is_zero_number, "contentType": _is_empty}
        )


class LeaderElection(_Model):
    leader_elect: StrictBool = True
    lease_duration: Duration = DEFAULT_LEASE_DURATION
    renew_deadline: Duration = DEFAULT_RENEW_DEADLINE
    retry_period: Duration = DEFAULT_RETRY_PERIOD
    resource_lock: StrictStr = LEASES_RESOURCE_LOCK
    resource_name: StrictStr = DEFAULT_LEADER_ELECTION_RESOURCE_NAME
    resource_namespace: StrictStr = DEFAULT_LEADER_ELECTION_NAMESPACE

    @model_validator(mode="before")
    @classmethod
    def _zero_is_default(cls, data: Any) -> Any:
        return _drop_zero(
            data,
            {
                "leaseDuration": _is_zero_duration,
                "renewDeadline": _is_zero_duration,
                "retryPeriod": _is_zero_duration,
                "resourceLock": _is_empty,
                "resourceName": _is_empty,
                "resourceNamespace": _is_empty,
            },
        )

    @model_validator(mode="after")
    def _consistent(self) -> LeaderElection:
        if not self.leader_elect:
            return self
        problems = [
            Problem((field,), "must be > 0")
            for field, value in (
                ("leaseDuration", self.lease_duration),
                ("renewDeadline", self.renew_deadline),
                ("retryPeriod", self.retry_period),
            )
            if value <= 0
        ]
        if not problems and self.lease_duration <= self.renew_deadline:
            problems.append(
                Problem(
                    ("leaseDuration",),
                    f"must be greater than renewDeadline ({format_duration(self.renew_deadline)}),"
                    f" got {format_duration(self.lease_duration)}",
                )
            )
        jittered = LEADER_ELECTION_JITTER_FACTOR * self.retry_period
        if not problems and self.renew_deadline <= jittered:
            problems.append(
                Problem(
                    ("renewDeadline",),
                    f"must be greater than retryPeriod * {LEADER_ELECTION_JITTER_FACTOR}"
                    f" ({format_duration(jittered)}), got {format_duration(self.renew_deadline)}",
                )
            )
        if self.resource_lock != LEASES_RESOURCE_LOCK:
            problems.append(
                Problem(
                    ("resourceLock",),
                    f"{self.resource_lock!r} is not supported; only {LEASES_RESOURCE_LOCK!r}",
                )
            )
        if problems:
            raise FieldProblems(problems)
        return self


class PluginEntry(_Model):
    """One plugin in an ``enabled`` or ``disabled`` list; ``weight`` counts
    only at Score (unset or 0 means 1)."""

    name: Annotated[StrictStr, _check(bool, "must not be empty")]
    weight: Annotated[StrictInt, _check(lambda v: v >= 0, "must be >= 0")] | None = None


class PluginSet(_Model):
    enabled: tuple[PluginEntry, ...] = ()
    disabled: tuple[PluginEntry, ...] = ()


def _no_placement_plugins(value: PluginSet) -> PluginSet:
    if value.enabled:
        names = ", ".join(repr(entry.name) for entry in value.enabled)
        raise ValueError(
            f"not supported: pyscheduler has no pod-group placement phase"
            f" (GangScheduling is alpha and off in v1.36); remove {names}"
        )
    return value


class Plugins(_Model):
    pre_enqueue: PluginSet = PluginSet()
    queue_sort: PluginSet = PluginSet()
    pre_filter: PluginSet = PluginSet()
    filter: PluginSet = PluginSet()
    post_filter: PluginSet = PluginSet()
    pre_score: PluginSet = PluginSet()
    score: PluginSet = PluginSet()
    reserve: PluginSet = PluginSet()
    permit: PluginSet = PluginSet()
    pre_bind: PluginSet = PluginSet()
    bind: PluginSet = PluginSet()
    post_bind: PluginSet = PluginSet()
    multi_point: PluginSet = PluginSet()
    # Pod-group placement (gated by GangScheduling/TopologyAwareWorkloadScheduling,
    # alpha, off in v1.36): accepted empty, as kube-scheduler dumps them.
    placement_generate: Annotated[PluginSet, AfterValidator(_no_placement_plugins)] = PluginSet()
    placement_score: Annotated[PluginSet, AfterValidator(_no_placement_plugins)] = PluginSet()

    def at(self, point: ExtensionPoint) -> PluginSet:
        plugin_set = getattr(self, _point_attribute(point))
        assert isinstance(plugin_set, PluginSet)
        return plugin_set


class PluginConfig(_Model):
    """Arguments for one plugin; validated against the plugin's own model by
    ``resolve_profiles``, which knows the registry."""

    name: Annotated[StrictStr, _check(bool, "must not be empty")]
    args: dict[str, Any] | None = None


class Profile(_Model):
    scheduler_name: StrictStr | None = None
    percentage_of_nodes_to_score: Percentage | None = None
    plugins: Plugins = Plugins()
    plugin_config: tuple[PluginConfig, ...] = ()


def _no_extenders(value: tuple[Any, ...]) -> tuple[Any, ...]:
    if value:
        raise ValueError(
            "not supported: pyscheduler does not call scheduler extenders; "
            "write the logic as a plugin instead"
        )
    return value


def _default_profiles() -> tuple[Profile, ...]:
    return (Profile.model_validate({"schedulerName": DEFAULT_SCHEDULER_NAME}),)


class SchedulerConfiguration(_Model):
    api_version: StrictStr = API_VERSION
    kind: StrictStr = KIND
    # Upstream's worker count for filtering and scoring. Accepted with
    # upstream's bounds and shown in /configz; filtering and scoring run on
    # the one event loop here whatever it says (logged at start).
    parallelism: Annotated[
        StrictInt,
        _check(lambda v: v <= _INT32_MAX, f"must be at most {_INT32_MAX}"),
        _check(lambda v: v > 0, "should be an integer value greater than zero"),
    ] = DEFAULT_PARALLELISM
    percentage_of_nodes_to_score: Percentage = DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE
    pod_initial_backoff_seconds: Annotated[
        BackoffSeconds, _check(lambda v: v > 0, "must be > 0")
    ] = DEFAULT_POD_INITIAL_BACKOFF_SECONDS
    pod_max_backoff_seconds: BackoffSeconds = DEFAULT_POD_MAX_BACKOFF_SECONDS
    client_connection: ClientConnection = ClientConnection()
    leader_election: LeaderElection = LeaderElection()
    profiles: tuple[Profile, ...] = Field(default_factory=_default_profiles)
    extenders: Annotated[tuple[Any, ...], AfterValidator(_no_extenders)] = ()
    delay_cache_until_active: Annotated[
        StrictBool,
        _refused("the informers always start before leader election is won; set false"),
    ] = False
    # Upstream's defaults, accepted and shown; there is no /debug/pprof here
    # (Go's profiler), which the start-up log says when either is true.
    enable_profiling: StrictBool = True
    enable_contention_profiling: StrictBool = True

    @field_validator("api_version")
    @classmethod
    def _known_version(cls, value: str) -> str:
        if value != API_VERSION:
            hint = " (only v1 is served since Kubernetes 1.29)" if API_GROUP in value else ""
            raise ValueError(f"unsupported {value!r}: expected {API_VERSION!r}{hint}")
        return value

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        if value != KIND:
            raise ValueError(f"must be {KIND!r}, got {value!r}")
        return value

    @field_validator("profiles")
    @classmethod
    def _default_profile(cls, value: tuple[Profile, ...]) -> tuple[Profile, ...]:
        if not value:
            return _default_profiles()
        if len(value) == 1 and value[0].scheduler_name is None:
            return (value[0].model_copy(update={"scheduler_name": DEFAULT_SCHEDULER_NAME}),)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> SchedulerConfiguration:
        problems = []
        if self.pod_max_backoff_seconds < self.pod_initial_backoff_seconds:
            problems.append(
                Problem(
                    ("podMaxBackoffSeconds",),
                    f"must be >= podInitialBackoffSeconds ({self.pod_initial_backoff_seconds})",
                )
            )
        first_use: dict[str, int] = {}
        for index, profile in enumerate(self.profiles):
            loc = ("profiles", index, "schedulerName")
            name = profile.scheduler_name
            if name is None:
                problems.append(Problem(loc, "required when there is more than one profile"))
            elif not name:
                problems.append(Problem(loc, "must not be empty"))
            elif name in first_use:
                problems.append(
                    Problem(loc, f"duplicate {name!r}: also used by profiles[{first_use[name]}]")
                )
            else:
                first_use[name] = index
        if problems:
            raise FieldProblems(problems)
        return self
