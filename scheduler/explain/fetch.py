"""Reading ``/debug/pods/{namespace}/{name}`` from a running scheduler.

Two routes, both with the kubeconfig's identity (``--token`` overrides):
- direct: ``--url https://host:port`` (or ``--port``, meaning
  ``https://127.0.0.1:PORT``), the scheduler's ops endpoint, which checks
  the bearer token with TokenReview/SubjectAccessReview;
- through the API server: ``--service NAMESPACE/NAME[:PORT]`` uses the
  service proxy, ``{server}/api/v1/namespaces/NS/services/https:NAME:PORT/
  proxy/debug/pods/...``, so only the API server needs to be reachable.

TLS: the kubeconfig's CA for the API server; ``--insecure-skip-tls-verify``
for a direct endpoint with a self-signed certificate. Client certificates
from the kubeconfig are presented when there is no token. Standard library
only: a one-shot GET does not need the daemon's asyncio client.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

DEFAULT_TIMEOUT = 10.0


class FetchError(Exception):
    """The diagnosis could not be read; the message says why."""


@dataclass(frozen=True)
class Identity:
    server: str = ""
    token: str = ""
    ca_data: bytes = b""
    cert_data: bytes = b""
    key_data: bytes = b""
    insecure: bool = False


def _named(items: Any, name: str, what: str) -> Mapping[str, Any]:
    for item in items or ():
        if isinstance(item, Mapping) and item.get("name") == name:
            return item.get(what) or {}
    raise FetchError(f"kubeconfig: no {what} named {name!r}")


def _data(section: Mapping[str, Any], key: str, base: Path) -> bytes:
    if section.get(f"{key}-data"):
        return base64.b64decode(section[f"{key}-data"])
    if section.get(key):
        return (base / str(section[key])).read_bytes()
    return b""


def load_identity(path: str | None, context: str | None = None) -> Identity:
    """The server and credentials of ``context`` (default: the current one)
    in the kubeconfig at ``path`` (default: ``$KUBECONFIG`` or ``~/.kube/config``)."""
    location = Path(
        path or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or "~/.kube/config"
    ).expanduser()
    try:
        config = yaml.safe_load(location.read_text()) or {}
    except (OSError, yaml.YAMLError) as error:
        raise FetchError(f"cannot read kubeconfig {location}: {error}") from None
    name = context or config.get("current-context")
    if not name:
        raise FetchError(f"kubeconfig {location}: no current context")
    ctx = _named(config.get("contexts"), name, "context")
    cluster = _named(config.get("clusters"), str(ctx.get("cluster")), "cluster")
    user = _named(config.get("users"), str(ctx.get("user")), "user") if ctx.get("user") else {}
    base = location.parent
    token = str(user.get("token") or "")
    if not token and user.get("tokenFile"):
        token = (base / str(user["tokenFile"])).read_text().strip()
    return Identity(
        server=str(cluster.get("server") or "").rstrip("/"),
        token=token,
        ca_data=_data(cluster, "certificate-authority", base),
        cert_data=_data(user, "client-certificate", base),
        key_data=_data(user, "client-key", base),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
    )


def context_namespace(path: str | None, context: str | None = None) -> str:
    """The namespace of the kubeconfig context, as kubectl uses it when no
    ``-n`` is given; ``default`` when unset or unreadable."""
    location = Path(
        path or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or "~/.kube/config"
    ).expanduser()
    try:
        config = yaml.safe_load(location.read_text()) or {}
        name = context or config.get("current-context")
        for entry in config.get("contexts") or ():
            if entry.get("name") == name:
                return str((entry.get("context") or {}).get("namespace") or "default")
    except (OSError, yaml.YAMLError, AttributeError):
        pass
    return "default"


def debug_path(namespace: str, name: str) -> str:
    quote = urllib.parse.quote
    return f"/debug/pods/{quote(namespace, safe='')}/{quote(name, safe='')}"


def service_proxy_url(server: str, service: str, path: str) -> str:
    """``NS/NAME[:PORT]`` -> the API server's proxy URL for ``path``."""
    namespace, _, rest = service.rpartition("/")
    name, _, port = rest.partition(":")
    if not namespace or not name:
        raise FetchError(f"--service {service}: expected NAMESPACE/NAME[:PORT]")
    return (
        f"{server}/api/v1/namespaces/{namespace}/services/"
        f"https:{name}:{port or '10259'}/proxy{path}"
    )


def _context(identity: Identity, *, verify: bool) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if identity.ca_data:
        context.load_verify_locations(cadata=identity.ca_data.decode())
    if not verify or identity.insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if identity.cert_data and identity.key_data and not identity.token:
        with tempfile.TemporaryDirectory() as directory:
            cert, key = Path(directory, "cert.pem"), Path(directory, "key.pem")
            cert.write_bytes(identity.cert_data)
            key.write_bytes(identity.key_data)
            context.load_cert_chain(cert, key)
    return context


def get_json(
    url: str, identity: Identity, *, verify: bool = True, timeout: float = DEFAULT_TIMEOUT
) -> Any:
    headers = {"Accept": "application/json", "User-Agent": "kubectl-pyscheduler"}
    if identity.token:
        headers["Authorization"] = f"Bearer {identity.token}"
    request = urllib.request.Request(url, headers=headers)
    context = _context(identity, verify=verify) if url.startswith("https:") else None
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        body = error.read().decode(errors="replace")
        try:
            detail = json.loads(body).get("error") or json.loads(body).get("message") or body
        except (ValueError, AttributeError):
            detail = body
        raise FetchError(f"GET {url}: {error.code}: {str(detail).strip()}") from None
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        raise FetchError(f"GET {url}: {reason}") from None
