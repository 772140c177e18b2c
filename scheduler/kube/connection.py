"""Where the API server is and who we are: read from a kubeconfig or the pod's
service account, using kubernetes_asyncio's loaders (and nothing else of it).

The result is a plain ``Connection``: base URL, TLS context, and an async
``authorization()`` that returns the ``Authorization`` header value. For the
in-cluster service account the loader installs a refresh hook, so a rotated
token file is picked up without a restart. A kubeconfig's credentials
(token, client certificate) are read once at connect time; exec/OIDC
credentials that expire need a process restart (documented limitation).
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config


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
    configuration = k8s_client.Configuration()
    try:
        if kubeconfig:
            await k8s_config.load_kube_config(
                config_file=kubeconfig,
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
        else:
            k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    except (k8s_config.ConfigException, OSError) as err:
        if master and not kubeconfig:
            return _from_configuration(_bare(master))
        where = kubeconfig or "in-cluster service account"
        raise ConfigError(f"cannot load cluster configuration from {where}: {err}") from err
    if master:
        configuration.host = master
    return _from_configuration(configuration)


def _check_file(kubeconfig: str) -> None:
    """A missing kubeconfig is named as such (the loader would say that the
    file lacks current-context)."""
    if not os.path.isfile(kubeconfig):
        reason = "no such file" if not os.path.exists(kubeconfig) else "not a regular file"
        raise ConfigError(f"kubeconfig {kubeconfig}: {reason}")


def _bare(master: str) -> Any:
    configuration = k8s_client.Configuration()
    configuration.host = master if "://" in master else f"https://{master}"
    return configuration


def _from_configuration(configuration: Any) -> Connection:
    host = str(configuration.host).rstrip("/")
    ssl_context: ssl.SSLContext | None = None
    if host.startswith("https://"):
        ssl_context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
        if configuration.cert_file:
            ssl_context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
        if not configuration.verify_ssl:
            ssl_context.check_hostname = False
            ssl_context.verify_mode = ssl.CERT_NONE

    async def authorization() -> str | None:
        # Runs the loader's refresh hook (service-account token rotation) first.
        value = await configuration.get_api_key_with_prefix("BearerToken")
        return str(value) if value else None

    return Connection(
        host=host,
        ssl_context=ssl_context,
        authorization=authorization,
        tls_server_name=configuration.tls_server_name or None,
        proxy=configuration.proxy or None,
    )
