"""AutoscaleEnforcerArgs: where the plugin finds its config and serves agents.

These are the scheduler-configuration ``pluginConfig`` args, not the
plugin's own configuration (that lives in the ConfigMap they name). Defaults
are the reference's constants: ConfigMap ``kube-system/scheduler-plugin-config``,
key ``autoscaler-enforcer-config.json``, start-up wait 5 s, agent port 10299.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from plugins.autoscale_enforcer.agent_auth import service_account_user
from plugins.autoscale_enforcer.config import (
    CONFIG_MAP_KEY,
    CONFIG_MAP_NAME,
    CONFIG_MAP_NAMESPACE,
    INIT_CONFIG_MAP_TIMEOUT_SECONDS,
)
from scheduler.framework import ListenerLimits
from scheduler.framework.services import HEARTBEAT_SECONDS

AGENT_PROCESS_NICE = -10
AGENT_PORT = 10299
# The agent port's limits (``scheduler.framework.ListenerLimits``' defaults).
AGENT_MAX_CONNECTIONS = 1024
AGENT_REQUEST_TIMEOUT_SECONDS = 30.0
AGENT_IDLE_TIMEOUT_SECONDS = 75.0
AGENT_MAX_UNREAD_RESPONSE_BYTES = 256 << 10
AGENT_REQUESTS_PER_TURN = 16
AGENT_LIVENESS_SECONDS = 5.0
RESERVE_TIMEOUT_SECONDS = 5.0
MAX_SECONDS = 3600.0
# Optional agent authentication (off by default, as Neon's agent API).
AUTH_NONE: Literal["None"] = "None"
AUTH_SERVICE_ACCOUNT_TOKEN: Literal["ServiceAccountToken"] = "ServiceAccountToken"
# The ServiceAccount Neon's autoscaler-agent DaemonSet runs as (namespace
# neonvm-system, as the shipped NetworkPolicy admits).
AGENT_SERVICE_ACCOUNT = "neonvm-system:autoscaler-agent"
AGENT_TOKEN_CACHE_TTL_SECONDS = 10.0  # upstream's token-webhook cache TTL
AGENT_TOKEN_REVIEW_TIMEOUT_SECONDS = 10.0


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
    # The agent port's limits (see ``scheduler.framework.ListenerLimits``).
    agent_max_connections: int = AGENT_MAX_CONNECTIONS
    agent_request_timeout_seconds: float = AGENT_REQUEST_TIMEOUT_SECONDS
    agent_idle_timeout_seconds: float = AGENT_IDLE_TIMEOUT_SECONDS
    agent_max_unread_response_bytes: int = AGENT_MAX_UNREAD_RESPONSE_BYTES
    agent_requests_per_turn: int = AGENT_REQUESTS_PER_TURN
    # A hung or stopped agent process is killed (and restarted) after this long.
    agent_liveness_seconds: float = AGENT_LIVENESS_SECONDS
    # How long a pod waits at Permit for the agent process to confirm its
    # Reserve before it is rejected and retried.
    reserve_timeout_seconds: float = RESERVE_TIMEOUT_SECONDS
    # ``ServiceAccountToken``: every agent request carries
    # ``Authorization: Bearer <ServiceAccount token>``, checked by a
    # TokenReview (cached) and allowed for ``agentServiceAccounts`` only
    # (``agent_auth``); ``None``: no authentication (the NetworkPolicy is
    # then the only guard).
    agent_authentication: Literal["None", "ServiceAccountToken"] = AUTH_NONE
    agent_service_accounts: tuple[str, ...] = (AGENT_SERVICE_ACCOUNT,)
    agent_token_cache_ttl_seconds: float = AGENT_TOKEN_CACHE_TTL_SECONDS
    agent_token_review_timeout_seconds: float = AGENT_TOKEN_REVIEW_TIMEOUT_SECONDS

    @field_validator("agent_service_accounts")
    @classmethod
    def _accounts(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("must name at least one ServiceAccount (namespace:name)")
        for entry in value:
            service_account_user(entry)  # raises ValueError with the entry
        return value

    @field_validator("agent_max_connections", "agent_requests_per_turn")
    @classmethod
    def _positive(cls, value: int) -> int:
        if value <= 0:
            raise ValueError("must be greater than zero")
        return value

    @field_validator("agent_max_unread_response_bytes")
    @classmethod
    def _at_least_a_body(cls, value: int) -> int:
        if value < 1024:
            raise ValueError("must be greater than or equal to 1024")
        return value

    @field_validator(
        "agent_request_timeout_seconds",
        "agent_idle_timeout_seconds",
        "agent_liveness_seconds",
        "reserve_timeout_seconds",
        "agent_token_cache_ttl_seconds",
        "agent_token_review_timeout_seconds",
    )
    @classmethod
    def _duration(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be a finite number of seconds")
        if value <= 0:
            raise ValueError("must be greater than zero")
        if value > MAX_SECONDS:
            raise ValueError(f"must be less than or equal to {MAX_SECONDS:g}")
        return value

    @field_validator("agent_liveness_seconds")
    @classmethod
    def _liveness_above_heartbeat(cls, value: float) -> float:
        if value <= 2 * HEARTBEAT_SECONDS:
            raise ValueError(
                f"must be greater than {2 * HEARTBEAT_SECONDS:g} "
                f"(twice the heartbeat interval of {HEARTBEAT_SECONDS:g}s)"
            )
        return value

    def agent_limits(self) -> ListenerLimits:
        """The agent port's limits as the listener takes them."""
        return ListenerLimits(
            max_connections=self.agent_max_connections,
            request_seconds=self.agent_request_timeout_seconds,
            idle_seconds=self.agent_idle_timeout_seconds,
            high_water_bytes=self.agent_max_unread_response_bytes,
            requests_per_turn=self.agent_requests_per_turn,
            liveness_seconds=self.agent_liveness_seconds,
        )
