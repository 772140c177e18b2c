"""Where the API server is and who we are: read from a kubeconfig or the pod's
service account (``kubeconfig``), or, for a user that authenticates through
an exec or auth-provider plugin, by kubernetes_asyncio's loader, imported
only then (it costs a third of a second of the start).

The result is a plain ``Connection``: base URL, TLS context, and an async
``authorization()`` that returns the ``Authorization`` header value. The
in-cluster service account's token file is read again once a minute, so a
rotated token is picked up without a restart (client-go's period). A
kubeconfig's credentials (token, client certificate) are read once at
connect time; exec/OIDC credentials that expire need a process restart
(documented limitation).
"""

from __future__ import annotations

import os
import ssl
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from scheduler.kube.kubeconfig import (
    Endpoint,
    KubeconfigError,
    NeedsPluginLoader,
    in_cluster,
    read_kubeconfig,
    read_token,
)

TOKEN_REFRESH_SECONDS = 60.0


class ConfigError(Exception):
    """No usable cluster configuration (missing kubeconfig, not in a cluster)."""


@dataclass(frozen=True)
class Connection:
    host: str
    ssl_context: ssl.SSLContext | None
    authorization: Callable[[], Awaitable[str | None]]
    tls_server_name: str | None = None
    proxy: str | None = None


async def load_connection(
    kubeconfig: str | None, context: str | None = None, master: str | None = None
) -> Connection:
    """From the kubeconfig file at ``kubeconfig``; else from the in-cluster
    service account. ``master`` (kube-scheduler's ``--master``) replaces the
    server address of either; with neither available it is used alone, without
    credentials, as client-go's ``BuildConfigFromFlags`` does."""
    if kubeconfig:
        _check_file(kubeconfig)
    try:
        endpoint = read_kubeconfig(kubeconfig, context) if kubeconfig else in_cluster()
    except NeedsPluginLoader:
        return await _through_plugins(kubeconfig or "", context, master)
    except KubeconfigError as err:
        if master and not kubeconfig:
            return from_endpoint(Endpoint(host=_bare(master)))
        where = kubeconfig or "in-cluster service account"
        raise ConfigError(f"cannot load cluster configuration from {where}: {err}") from err
    if master:
        endpoint = replace(endpoint, host=_bare(master).rstrip("/"))
    return from_endpoint(endpoint)


def _check_file(kubeconfig: str) -> None:
    """A missing kubeconfig is named as such."""
    if not os.path.isfile(kubeconfig):
        reason = "no such file" if not os.path.exists(kubeconfig) else "not a regular file"
        raise ConfigError(f"kubeconfig {kubeconfig}: {reason}")


def _bare(master: str) -> str:
    return master if "://" in master else f"https://{master}"


def from_endpoint(endpoint: Endpoint, clock: Callable[[], float] = time.monotonic) -> Connection:
    host = endpoint.host.rstrip("/")
    ssl_context: ssl.SSLContext | None = None
    if host.startswith("https://"):
        try:
            ssl_context = _ssl_context(endpoint)
        except (OSError, ssl.SSLError) as err:
            raise ConfigError(f"cannot set up TLS for {host}: {err}") from err
    return Connection(
        host=host,
        ssl_context=ssl_context,
        authorization=_authorization(endpoint, clock),
        tls_server_name=endpoint.tls_server_name,
        proxy=endpoint.proxy,
    )


def _ssl_context(endpoint: Endpoint) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=endpoint.ca_file, cadata=endpoint.ca_data)
    if endpoint.cert_data is not None or endpoint.cert_file:
        with tempfile.TemporaryDirectory(prefix="pyscheduler-tls-") as directory:
            cert = _materialize(directory, "client.crt", endpoint.cert_data, endpoint.cert_file)
            key = _materialize(directory, "client.key", endpoint.key_data, endpoint.key_file)
            if cert is None:
                raise ConfigError("a client key without a client certificate")
            context.load_cert_chain(cert, keyfile=key)
    if endpoint.insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _materialize(directory: str, name: str, data: bytes | None, path: str | None) -> str | None:
    """A path to load: the file given, or the data written to a private file
    (ssl loads certificate chains from files only; removed once loaded)."""
    if data is None:
        return path
    target = os.path.join(directory, name)
    descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as out:
        out.write(data)
    return target


def _authorization(
    endpoint: Endpoint, clock: Callable[[], float]
) -> Callable[[], Awaitable[str | None]]:
    token_file = endpoint.token_file
    if token_file is None:
        fixed = endpoint.authorization

        async def constant() -> str | None:
            return fixed

        return constant
    cached: list[Any] = [None, float("-inf")]  # header, when read

    async def refreshed() -> str | None:
        now = clock()
        if cached[0] is None or now - cached[1] >= TOKEN_REFRESH_SECONDS:
            try:
                cached[0] = f"Bearer {read_token(token_file)}"
                cached[1] = now
            except KubeconfigError:
                if cached[0] is None:
                    raise
        return str(cached[0])

    return refreshed


async def _through_plugins(kubeconfig: str, context: str | None, master: str | None) -> Connection:
    """kubernetes_asyncio's loader, for exec and auth-provider users."""
    from kubernetes_asyncio import client as k8s_client  # noqa: PLC0415 - see the docstring
    from kubernetes_asyncio import config as k8s_config  # noqa: PLC0415

    configuration = k8s_client.Configuration()
    try:
        await k8s_config.load_kube_config(
            config_file=kubeconfig,
            context=context,
            client_configuration=configuration,
            persist_config=False,
        )
    except (k8s_config.ConfigException, OSError) as err:
        raise ConfigError(f"cannot load cluster configuration from {kubeconfig}: {err}") from err
    if master:
        configuration.host = _bare(master)
    endpoint = Endpoint(
        host=str(configuration.host),
        ca_file=configuration.ssl_ca_cert,
        cert_file=configuration.cert_file,
        key_file=configuration.key_file,
        insecure=not configuration.verify_ssl,
        tls_server_name=configuration.tls_server_name or None,
        proxy=configuration.proxy or None,
    )

    async def authorization() -> str | None:
        # Runs the loader's refresh hook (exec/OIDC credentials) first.
        value = await configuration.get_api_key_with_prefix("BearerToken")
        return str(value) if value else None

    return replace(from_endpoint(endpoint), authorization=authorization)
