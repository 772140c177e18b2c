"""The ops server over HTTPS with a guard: the self-signed or given
certificate, refusals as a JSON Status (401/403), allowed requests served."""

from __future__ import annotations

import asyncio
import datetime
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import orjson
import pytest
from cryptography import x509
from prometheus_client import CollectorRegistry

from scheduler.ops.delegation import DelegatedAuth, UserInfo
from scheduler.ops.diagnostics import AttemptLog
from scheduler.ops.health import scheduler_health
from scheduler.ops.server import OpsServer
from scheduler.ops.tls import self_signed_pem, serving_context
from tests.support.clock import FakeClock

WALL = 1_700_000_000.0
PROM = UserInfo("prom", groups=("system:authenticated",))


async def _token(token: str) -> UserInfo | None:
    return PROM if token == "good" else None


async def _access(user: UserInfo, path: str, verb: str) -> tuple[bool, str]:
    return (user.username, path, verb) == ("prom", "/metrics", "get"), ""


@asynccontextmanager
async def served(context: ssl.SSLContext) -> AsyncIterator[str]:
    health = scheduler_health(
        shutting_down=lambda: False, handlers_synced=lambda: True, leader_election=None
    )
    server = OpsServer(
        "127.0.0.1",
        0,
        CollectorRegistry(),
        health,
        AttemptLog(max_pods=1, attempts_per_pod=1),
        config_dump=lambda: {},
        ssl_context=context,
        guard=DelegatedAuth(_token, _access, FakeClock()),
    )
    await server.start()
    try:
        assert server.scheme == "https"
        yield f"https://127.0.0.1:{server.bound_port}"
    finally:
        await server.stop()


async def _get(url: str, token: str | None = None) -> tuple[int, bytes]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    connector = aiohttp.TCPConnector(ssl=False)
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.get(url, headers=headers) as response,
    ):
        return response.status, await response.read()


@pytest.mark.parametrize(
    ("path", "token", "status"),
    [
        pytest.param("/livez", None, 200, id="probe open"),
        pytest.param("/readyz", None, 200, id="readiness open"),
        pytest.param("/metrics", None, 403, id="anonymous metrics"),
        pytest.param("/debug/pods/ns/p", None, 403, id="anonymous debug"),
        pytest.param("/configz", "good", 403, id="scraper configz"),
        pytest.param("/metrics", "good", 200, id="scraper metrics"),
        pytest.param("/metrics", "bad", 401, id="bad token"),
    ],
)
async def test_guarded_https(path: str, token: str | None, status: int) -> None:
    async with served(serving_context(None, None, WALL)) as base:
        got, body = await _get(base + path, token)

    assert got == status
    if status in {401, 403}:
        answer = orjson.loads(body)
        assert answer["kind"] == "Status"
        assert answer["code"] == status


async def test_plain_http_is_not_served_on_the_secure_port() -> None:
    async with served(serving_context(None, None, WALL)) as base:
        plain = base.replace("https://", "http://")
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.ClientError):
                await session.get(plain + "/livez")


async def test_given_certificate_is_served(tmp_path: Path) -> None:
    now = datetime.datetime.fromtimestamp(WALL, datetime.UTC)
    cert_pem, key_pem = self_signed_pem(["given.example"], now)
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert.write_bytes(cert_pem)
    key.write_bytes(key_pem)

    async with served(serving_context(str(cert), str(key), WALL)) as base:
        port = int(base.rsplit(":", 1)[1])
        served_pem = await asyncio.to_thread(ssl.get_server_certificate, ("127.0.0.1", port))

    served_cert = x509.load_pem_x509_certificate(served_pem.encode())
    assert served_cert == x509.load_pem_x509_certificate(cert_pem)


def test_self_signed_certificate_names_loopback_and_hosts() -> None:
    now = datetime.datetime.fromtimestamp(WALL, datetime.UTC)
    cert_pem, _ = self_signed_pem(["localhost", "pod-1"], now)

    cert = x509.load_pem_x509_certificate(cert_pem)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost", "pod-1"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert cert.not_valid_before_utc < now < cert.not_valid_after_utc
