"""The kubeconfig and in-cluster reader: every credential form it takes, the
errors it names, and plugin users handed to kubernetes_asyncio's loader."""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from scheduler.kube.connection import ConfigError, from_endpoint, load_connection
from scheduler.kube.kubeconfig import (
    Endpoint,
    KubeconfigError,
    NeedsPluginLoader,
    endpoint_of,
    in_cluster,
)
from scheduler.ops.tls import self_signed_pem
from tests.support.clock import FakeClock
from tests.support.interpreter import fresh_json

B64_CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nCA\n").decode()
B64_CERT = base64.b64encode(b"CERT").decode()
B64_KEY = base64.b64encode(b"KEY").decode()


def kubeconfig(
    cluster: dict[str, Any] | None = None,
    user: dict[str, Any] | None = None,
    *,
    current: str | None = "main",
    server: str = "https://10.0.0.1:6443/",
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": current,
        "contexts": [
            {"name": "main", "context": {"cluster": "c", "user": "u"}},
            {"name": "other", "context": {"cluster": "c2", "user": "u"}},
        ],
        "clusters": [
            {"name": "c", "cluster": {"server": server, **(cluster or {})}},
            {"name": "c2", "cluster": {"server": "https://other:6443"}},
        ],
        "users": [{"name": "u", "user": user or {}}],
    }


@pytest.mark.parametrize(
    ("document", "context", "expected"),
    [
        pytest.param(
            kubeconfig(user={"token": "abc"}),
            None,
            Endpoint(host="https://10.0.0.1:6443", authorization="Bearer abc"),
            id="a token, the trailing slash dropped",
        ),
        pytest.param(
            kubeconfig(user={"token": "abc", "tokenFile": "ignored"}),
            None,
            Endpoint(host="https://10.0.0.1:6443", authorization="Bearer abc"),
            id="token wins over tokenFile",
        ),
        pytest.param(
            kubeconfig(user={"username": "admin", "password": "pw"}),
            None,
            Endpoint(
                host="https://10.0.0.1:6443",
                authorization="Basic " + base64.b64encode(b"admin:pw").decode(),
            ),
            id="username and password",
        ),
        pytest.param(
            kubeconfig(
                {"certificate-authority": "ca.crt"},
                {"client-certificate": "/abs/client.crt", "client-key": "client.key"},
            ),
            None,
            Endpoint(
                host="https://10.0.0.1:6443",
                ca_file="/base/ca.crt",
                cert_file="/abs/client.crt",
                key_file="/base/client.key",
            ),
            id="files relative to the kubeconfig's directory",
        ),
        pytest.param(
            kubeconfig(
                {"certificate-authority-data": B64_CA, "certificate-authority": "ignored"},
                {"client-certificate-data": B64_CERT, "client-key-data": B64_KEY},
            ),
            None,
            Endpoint(
                host="https://10.0.0.1:6443",
                ca_data="-----BEGIN CERTIFICATE-----\nCA\n",
                cert_data=b"CERT",
                key_data=b"KEY",
            ),
            id="data fields decoded and winning over files",
        ),
        pytest.param(
            kubeconfig(
                {
                    "insecure-skip-tls-verify": True,
                    "tls-server-name": "api.internal",
                    "proxy-url": "http://proxy:3128",
                }
            ),
            None,
            Endpoint(
                host="https://10.0.0.1:6443",
                insecure=True,
                tls_server_name="api.internal",
                proxy="http://proxy:3128",
            ),
            id="TLS options and a proxy",
        ),
        pytest.param(
            kubeconfig({"certificate-authority": "ca.crt"}, server="http://127.0.0.1:8080"),
            None,
            Endpoint(host="http://127.0.0.1:8080"),
            id="plain HTTP loads no TLS files",
        ),
        pytest.param(
            kubeconfig(current=None),
            "other",
            Endpoint(host="https://other:6443"),
            id="a context given by name",
        ),
    ],
)
def test_a_kubeconfig_gives_its_endpoint(
    document: dict[str, Any], context: str | None, expected: Endpoint
) -> None:
    assert endpoint_of(document, "/base", context) == expected


@pytest.mark.parametrize(
    ("document", "context", "message"),
    [
        pytest.param(kubeconfig(current=None), None, "no current-context", id="no context"),
        pytest.param(kubeconfig(), "missing", "no context named 'missing'", id="unknown context"),
        pytest.param(
            {**kubeconfig(), "clusters": []}, None, "no cluster named 'c'", id="unknown cluster"
        ),
        pytest.param(kubeconfig(server=""), None, "has no server", id="a cluster without a server"),
        pytest.param(
            kubeconfig({"certificate-authority-data": "not base64!"}),
            None,
            "certificate-authority-data is not base64",
            id="bad base64",
        ),
    ],
)
def test_a_bad_kubeconfig_says_what_is_wrong(
    document: dict[str, Any], context: str | None, message: str
) -> None:
    with pytest.raises(KubeconfigError, match=message):
        endpoint_of(document, "/base", context)


@pytest.mark.parametrize(
    "user",
    [
        pytest.param({"exec": {"command": "aws"}}, id="exec"),
        pytest.param({"auth-provider": {"name": "oidc"}}, id="auth-provider"),
    ],
)
def test_plugin_users_go_to_the_plugin_loader(user: dict[str, Any]) -> None:
    with pytest.raises(NeedsPluginLoader):
        endpoint_of(kubeconfig(user=user), "/base")


def service_account(tmp_path: Path, token: str = "t0") -> Path:
    (tmp_path / "token").write_text(token + "\n")
    (tmp_path / "ca.crt").write_text("CA")
    return tmp_path


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        pytest.param("10.96.0.1", "https://10.96.0.1:443", id="IPv4"),
        pytest.param("fd00::1", "https://[fd00::1]:443", id="IPv6 bracketed"),
    ],
)
def test_in_cluster_endpoint(tmp_path: Path, host: str, expected: str) -> None:
    directory = service_account(tmp_path)
    environ = {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": "443"}
    endpoint = in_cluster(environ, str(directory))
    assert endpoint == Endpoint(
        host=expected, ca_file=str(directory / "ca.crt"), token_file=str(directory / "token")
    )


@pytest.mark.parametrize(
    ("environ", "files", "message"),
    [
        pytest.param({}, True, "not in a cluster", id="no service environment"),
        pytest.param(
            {"KUBERNETES_SERVICE_HOST": "h", "KUBERNETES_SERVICE_PORT": "443"},
            False,
            "does not exist",
            id="no service account files",
        ),
    ],
)
def test_not_in_a_cluster(
    tmp_path: Path, environ: dict[str, str], files: bool, message: str
) -> None:
    directory = service_account(tmp_path) if files else tmp_path
    with pytest.raises(KubeconfigError, match=message):
        in_cluster(environ, str(directory))


def test_a_rotated_service_account_token_is_read_after_a_minute(tmp_path: Path) -> None:
    directory = service_account(tmp_path, "first")
    clock = FakeClock()
    endpoint = Endpoint(host="http://api:8080", token_file=str(directory / "token"))
    connection = from_endpoint(endpoint, clock=clock.now)
    assert asyncio.run(connection.authorization()) == "Bearer first"
    (directory / "token").write_text("second")
    clock.advance(30)
    assert asyncio.run(connection.authorization()) == "Bearer first"
    clock.advance(31)
    assert asyncio.run(connection.authorization()) == "Bearer second"
    (directory / "token").unlink()
    clock.advance(61)
    assert asyncio.run(connection.authorization()) == "Bearer second"  # kept until readable


@pytest.mark.parametrize(
    ("kubeconfig_text", "master", "host"),
    [
        pytest.param(None, "127.0.0.1:6443", "https://127.0.0.1:6443", id="master alone"),
        pytest.param(
            json.dumps(kubeconfig(user={"token": "x"}, server="http://a:1")),
            "http://b:2",
            "http://b:2",
            id="master replaces the kubeconfig's server",
        ),
    ],
)
def test_master_overrides_the_server(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kubeconfig_text: str | None,
    master: str,
    host: str,
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    path = None
    if kubeconfig_text is not None:
        path = tmp_path / "kubeconfig"
        path.write_text(kubeconfig_text)
    connection = asyncio.run(load_connection(str(path) if path else None, master=master))
    assert connection.host == host


def test_no_configuration_at_all_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConfigError, match="in-cluster service account"):
        asyncio.run(load_connection(None))


_PROBE = """
import asyncio, json, sys
from scheduler.kube.connection import load_connection
connection = asyncio.run(load_connection(sys.argv[1]))
print(json.dumps({"host": connection.host, "loaded": "kubernetes_asyncio" in sys.modules}))
"""


def test_a_token_kubeconfig_does_not_import_kubernetes_asyncio(tmp_path: Path) -> None:
    """The daemon's start reads an ordinary kubeconfig without the heavy client
    package (a fresh interpreter's ``sys.modules`` tells; no time measured)."""
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(kubeconfig(user={"token": "x"}, server="http://a:1")))
    assert fresh_json(_PROBE, str(path)) == {"host": "http://a:1", "loaded": False}


@pytest.mark.parametrize("as_files", [False, True], ids=["data fields", "files"])
def test_a_client_certificate_and_ca_load_into_the_tls_context(
    tmp_path: Path, as_files: bool
) -> None:
    cert, key = self_signed_pem(["api.internal"], datetime.datetime.now(datetime.UTC))
    document = kubeconfig(
        {"certificate-authority-data": base64.b64encode(cert).decode()},
        {
            "client-certificate-data": base64.b64encode(cert).decode(),
            "client-key-data": base64.b64encode(key).decode(),
        },
    )
    if as_files:
        (tmp_path / "client.crt").write_bytes(cert)
        (tmp_path / "client.key").write_bytes(key)
        document["users"][0]["user"] = {
            "client-certificate": "client.crt",
            "client-key": "client.key",
        }
    connection = from_endpoint(endpoint_of(document, str(tmp_path)))
    assert connection.ssl_context is not None
    assert len(connection.ssl_context.get_ca_certs()) == 1


def test_an_unreadable_client_key_is_a_config_error() -> None:
    cert, _ = self_signed_pem(["api.internal"], datetime.datetime.now(datetime.UTC))
    endpoint = Endpoint(
        host="https://api:6443", ca_data=cert.decode(), cert_data=cert, key_data=b"no"
    )
    with pytest.raises(ConfigError, match="cannot set up TLS"):
        from_endpoint(endpoint)
