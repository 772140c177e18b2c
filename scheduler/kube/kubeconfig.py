"""Where the API server is and how to prove who we are, for the credentials
nearly every deployment uses: a kubeconfig whose user has a token, a token
file, a client certificate or a username and password, or the pod's service
account. Read with the YAML parser the config loader already uses, so the
daemon's start does not import kubernetes_asyncio (a third of a second of
its two-second import, for two calls). A user with ``exec`` or
``auth-provider`` raises ``NeedsPluginLoader``: ``connection`` hands those
to kubernetes_asyncio's loader, which runs the plugins.

Semantics follow client-go and kubernetes_asyncio: the context is the given
one else ``current-context``; relative file paths resolve against the
kubeconfig's directory; ``*-data`` fields are base64 and win over their file
fields (as kubernetes_asyncio's ``FileOrData``); ``token`` wins over
``tokenFile``, which wins over ``username``/``password``; a server address loses
its trailing slash; ``insecure-skip-tls-verify``, ``tls-server-name`` and
``proxy-url`` are kept. In-cluster: ``KUBERNETES_SERVICE_HOST``/``_PORT``
(an IPv6 host bracketed), the service account's token file (re-read each
minute by ``connection``, so a rotated token is picked up) and its CA.
Pure apart from reading the named files.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class KubeconfigError(Exception):
    """The kubeconfig (or the in-cluster environment) cannot be used; says why."""


class NeedsPluginLoader(Exception):
    """The user authenticates through an exec or auth-provider plugin."""


@dataclass(frozen=True)
class Endpoint:
    host: str
    ca_file: str | None = None
    ca_data: str | None = None  # PEM text
    cert_file: str | None = None
    key_file: str | None = None
    cert_data: bytes | None = None  # PEM bytes (written to a private file to load)
    key_data: bytes | None = None
    insecure: bool = False
    tls_server_name: str | None = None
    proxy: str | None = None
    # the Authorization header value, fixed at load time ...
    authorization: str | None = None
    # ... or a bearer token read from this file, again each refresh period
    token_file: str | None = None


def read_kubeconfig(path: str, context: str | None = None) -> Endpoint:
    try:
        with open(path, encoding="utf-8") as source:
            document = yaml.safe_load(source)
    except OSError as error:
        raise KubeconfigError(f"kubeconfig {path}: {error.strerror}") from error
    except yaml.YAMLError as error:
        raise KubeconfigError(f"kubeconfig {path}: not YAML: {error}") from error
    if not isinstance(document, Mapping):
        raise KubeconfigError(f"kubeconfig {path}: not a mapping")
    return endpoint_of(document, os.path.dirname(os.path.abspath(path)), context, where=path)


def endpoint_of(
    document: Mapping[str, Any], base: str, context: str | None = None, *, where: str = ""
) -> Endpoint:
    """The endpoint of ``context`` (else ``current-context``) of a parsed kubeconfig."""
    name = context or document.get("current-context")
    if not name:
        raise KubeconfigError(f"kubeconfig {where}: no current-context and no context given")
    selected = _named(document, "contexts", "context", name, where)
    cluster = _named(document, "clusters", "cluster", selected.get("cluster"), where)
    user_name = selected.get("user")
    user = _named(document, "users", "user", user_name, where) if user_name else {}
    if "exec" in user or "auth-provider" in user:
        raise NeedsPluginLoader(f"user {user_name!r} authenticates through a plugin")
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise KubeconfigError(f"kubeconfig {where}: cluster of context {name!r} has no server")
    https = server.startswith("https")
    return Endpoint(
        host=server.rstrip("/"),
        ca_file=_file(cluster, "certificate-authority", base) if https else None,
        ca_data=_text(_data(cluster, "certificate-authority-data", where)) if https else None,
        cert_file=_file(user, "client-certificate", base) if https else None,
        key_file=_file(user, "client-key", base) if https else None,
        cert_data=_data(user, "client-certificate-data", where) if https else None,
        key_data=_data(user, "client-key-data", where) if https else None,
        insecure=bool(cluster.get("insecure-skip-tls-verify", False)),
        tls_server_name=cluster.get("tls-server-name") or None,
        proxy=cluster.get("proxy-url") or None,
        authorization=_authorization(user, base, where),
    )


def in_cluster(
    environ: Mapping[str, str] = os.environ, directory: str = SERVICE_ACCOUNT_DIR
) -> Endpoint:
    host = environ.get("KUBERNETES_SERVICE_HOST", "")
    port = environ.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise KubeconfigError("not in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set")
    token_file = os.path.join(directory, "token")
    ca_file = os.path.join(directory, "ca.crt")
    for needed in (token_file, ca_file):
        if not os.path.isfile(needed):
            raise KubeconfigError(f"service account file {needed} does not exist")
    if ":" in host:
        host = f"[{host}]"
    return Endpoint(host=f"https://{host}:{port}", ca_file=ca_file, token_file=token_file)


def read_token(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as source:
            token = source.read().strip()
    except OSError as error:
        raise KubeconfigError(f"token file {path}: {error.strerror}") from error
    if not token:
        raise KubeconfigError(f"token file {path} is empty")
    return token


def _named(
    document: Mapping[str, Any], section: str, field: str, name: object, where: str
) -> Mapping[str, Any]:
    for entry in document.get(section) or ():
        if isinstance(entry, Mapping) and entry.get("name") == name:
            value = entry.get(field) or {}
            if not isinstance(value, Mapping):
                raise KubeconfigError(f"kubeconfig {where}: {section} {name!r} is not a mapping")
            return value
    raise KubeconfigError(f"kubeconfig {where}: no {field} named {name!r} in {section}")


def _file(section: Mapping[str, Any], key: str, base: str) -> str | None:
    """A file field, relative to the kubeconfig's directory; None when the
    data field is there (data wins) or the field is absent."""
    if section.get(f"{key}-data"):
        return None
    value = section.get(key)
    if not value:
        return None
    return str(value) if os.path.isabs(str(value)) else os.path.join(base, str(value))


def _data(section: Mapping[str, Any], key: str, where: str) -> bytes | None:
    value = section.get(key)
    if not value:
        return None
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError) as error:
        raise KubeconfigError(f"kubeconfig {where}: {key} is not base64: {error}") from error


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "replace")


def _authorization(user: Mapping[str, Any], base: str, where: str) -> str | None:
    token = user.get("token")
    if token:
        return f"Bearer {token}"
    token_file = user.get("tokenFile")
    if token_file:
        path = str(token_file)
        return f"Bearer {read_token(path if os.path.isabs(path) else os.path.join(base, path))}"
    if "username" in user and "password" in user:
        pair = f"{user['username']}:{user['password']}".encode()
        return f"Basic {base64.b64encode(pair).decode()}"
    return None
