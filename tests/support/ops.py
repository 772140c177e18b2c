"""Reading the scheduler's ops port as a test: HTTPS with its self-signed
certificate (not verified), optionally with a bearer token.

``ops_get(base, path, token)`` returns (status, body text); ``kubeconfig_token``
reads the bearer token of a kubeconfig's first user (the local control
plane's admin, in ``system:masters``, is allowed everything).
"""

from __future__ import annotations

from pathlib import Path

import aiohttp
import yaml


def ops_session() -> aiohttp.ClientSession:
    """A session for the ops port: its certificate is self-signed."""
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False))


async def ops_get(base: str, path: str, token: str | None = None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with ops_session() as session, session.get(base + path, headers=headers) as response:
        return response.status, await response.text()


def kubeconfig_token(kubeconfig: Path) -> str:
    document = yaml.safe_load(kubeconfig.read_text())
    token = document["users"][0]["user"].get("token")
    if not token:
        raise ValueError(f"{kubeconfig}: the first user has no bearer token")
    return str(token)
