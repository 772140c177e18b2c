"""The scheduler's configuration: KubeSchedulerConfiguration v1 read from YAML,
validated, and resolved into the plugins of every profile.

``load_config`` / ``parse_config`` give a ``SchedulerConfiguration`` (checks
that need no plugin registry); ``resolve_profiles`` checks the rest against the
registry and returns one ``ResolvedProfile`` per profile. Every error is a
``ConfigError`` naming the field path of each problem.
"""

from scheduler.config.errors import ConfigError
from scheduler.config.loading import load_config, parse_config
from scheduler.config.model import (
    ALL_PLUGINS,
    API_VERSION,
    CONFIGURABLE_POINTS,
    DEFAULT_LEADER_ELECTION_RESOURCE_NAME,
    DEFAULT_SCHEDULER_NAME,
    KIND,
    MULTI_POINT_KEY,
    PROTOBUF_CONTENT_TYPE,
    ClientConnection,
    LeaderElection,
    PluginConfig,
    PluginEntry,
    Plugins,
    PluginSet,
    Profile,
    SchedulerConfiguration,
    point_key,
)
from scheduler.config.profiles import (
    PluginRef,
    PointsOf,
    ResolvedProfile,
    extension_points_of_class,
    points_of_classes,
    resolve_profiles,
)
from scheduler.framework.durations import parse_duration

__all__ = [
    "ALL_PLUGINS",
    "API_VERSION",
    "CONFIGURABLE_POINTS",
    "DEFAULT_LEADER_ELECTION_RESOURCE_NAME",
    "DEFAULT_SCHEDULER_NAME",
    "KIND",
    "MULTI_POINT_KEY",
    "PROTOBUF_CONTENT_TYPE",
    "ClientConnection",
    "ConfigError",
    "LeaderElection",
    "PluginConfig",
    "PluginEntry",
    "PluginRef",
    "PluginSet",
    "Plugins",
    "PointsOf",
    "Profile",
    "ResolvedProfile",
    "SchedulerConfiguration",
    "extension_points_of_class",
    "load_config",
    "parse_config",
    "parse_duration",
    "point_key",
    "points_of_classes",
    "resolve_profiles",
]
