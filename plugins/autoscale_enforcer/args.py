"""AutoscaleEnforcerArgs: where the plugin finds its config and serves agents.

These are the scheduler-configuration ``pluginConfig`` args, not the
plugin's own configuration (that lives in the ConfigMap they name). Defaults
are the reference's constants: ConfigMap ``kube-system/scheduler-plugin-config``,
key ``autoscaler-enforcer-config.json``, start-up wait 5 s, agent port 10299.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from plugins.autoscale_enforcer.config import (
    CONFIG_MAP_KEY,
    CONFIG_MAP_NAME,
    CONFIG_MAP_NAMESPACE,
    INIT_CONFIG_MAP_TIMEOUT_SECONDS,
)

AGENT_PROCESS_NICE = -10
AGENT_PORT = 10299


class AutoscaleEnforcerArgs(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )

    config_map_namespace: str = Field(default=CONFIG_MAP_NAMESPACE, min_length=1)
    config_map_name: str = Field(default=CONFIG_MAP_NAME, min_length=1)
    config_map_key: str = Field(default=CONFIG_MAP_KEY, min_length=1)
    init_config_map_timeout_seconds: float = Field(default=INIT_CONFIG_MAP_TIMEOUT_SECONDS, gt=0)
    agent_port: int = Field(default=AGENT_PORT, ge=0, le=65535)
    # The agent process's nice value (-20..19): below 0 it gets a CPU sooner
    # on a busy node, which keeps the agents' latency low; needs
    # CAP_SYS_NICE, without which it runs at the default priority (logged).
    agent_process_nice: int = Field(default=AGENT_PROCESS_NICE, ge=-20, le=19)
