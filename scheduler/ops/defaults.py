"""The ops port's connection limits by default: constants only, importing
nothing, so that the command line can show them in ``--help`` without
loading the server (``scheduler.ops.connlimits`` applies them)."""

from __future__ import annotations

HEADER_TIMEOUT_SECONDS = 32.0
HANDSHAKE_TIMEOUT_SECONDS = 10.0
MAX_CONNECTIONS = 1024
