"""AutoscaleEnforcer: node capacity authority for NeonVM VMs resized live by agents.

Public surface kept from the reference (neondatabase/autoscaling v0.1.13):
the plugin name, the ConfigMap constants, ``LABEL_VM``, the agent API's
content types and body limit. Registered in the in-tree registry only; it is
not in the default profile.
"""

from plugins.autoscale_enforcer.args import AGENT_PORT, AutoscaleEnforcerArgs
from plugins.autoscale_enforcer.config import (
    CONFIG_MAP_KEY,
    CONFIG_MAP_NAME,
    CONFIG_MAP_NAMESPACE,
    INIT_CONFIG_MAP_TIMEOUT_SECONDS,
    Config,
    ConfigError,
    parse_config,
)
from plugins.autoscale_enforcer.plugin import NAME, AutoscaleEnforcer, new
from plugins.autoscale_enforcer.protocol import (
    CONTENT_TYPE_ERROR,
    CONTENT_TYPE_JSON,
    MAX_HTTP_BODY_SIZE,
)
from plugins.autoscale_enforcer.vm import LABEL_VM
from scheduler.framework import PluginSpec

SPEC = PluginSpec(
    name=NAME, plugin_class=AutoscaleEnforcer, factory=new, args_model=AutoscaleEnforcerArgs
)

__all__ = [
    "AGENT_PORT",
    "CONFIG_MAP_KEY",
    "CONFIG_MAP_NAME",
    "CONFIG_MAP_NAMESPACE",
    "CONTENT_TYPE_ERROR",
    "CONTENT_TYPE_JSON",
    "INIT_CONFIG_MAP_TIMEOUT_SECONDS",
    "LABEL_VM",
    "MAX_HTTP_BODY_SIZE",
    "NAME",
    "SPEC",
    "AutoscaleEnforcer",
    "AutoscaleEnforcerArgs",
    "Config",
    "ConfigError",
    "parse_config",
]
