"""The Kubernetes URLs CEL library (``k8s.io/apiserver/pkg/cel/library``
``URLs``), for the DRA selector adapter.

``url()`` and ``isURL()`` accept what Go's ``url.ParseRequestURI`` accepts:
an absolute URI (a scheme, then an authority and path, or an opaque part)
or an absolute path; the accessors follow Go's ``url.URL``: ``getHost``
keeps the port and an IPv6 address's brackets, ``getHostname`` drops both,
``getEscapedPath`` is the path as given when it is validly escaped, else
escaped, and ``getQuery`` is the query in "matrix" form, unescaped. A URL
travels through CEL as a tagged map holding the text (equality is the
text's, as Go compares ``String()``). Linear; pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, unquote

URL_TAG = "__k8s_url__"

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
_PORT = re.compile(r"^[0-9]*$")
# what Go's validEncoded accepts in a path besides %XX escapes
_PATH_CHARS = re.compile(r"^(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/\[\]]|%[0-9A-Fa-f]{2})*$")
_HOST_CHARS = re.compile(r"^[A-Za-z0-9\-._~!$&'()*+,;=%]*$")
# Go's shouldEscape(encodePath) leaves these alone
_PATH_SAFE = "/$&+,:;=@-._~"


class _Parts:
    __slots__ = ("authority", "host", "path", "query", "scheme")

    def __init__(self, scheme: str, host: str, path: str, query: str) -> None:
        self.scheme = scheme
        self.host = host
        self.path = path
        self.query = query


def _error(text: str, reason: str) -> ValueError:
    return ValueError(f'URL parse error during conversion from string: parse "{text}": {reason}')


def _split(text: str) -> _Parts:
    """Go's ``ParseRequestURI`` checks, then ``Parse``'s components."""
    if not text:
        raise _error(text, "empty url")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise _error(text, "net/url: invalid control character in URL")
    rest, _, _fragment = text.partition("#")
    rest, _, query = rest.partition("?")
    scheme = ""
    match = _SCHEME.match(rest)
    if match:
        scheme, rest = match[1].lower(), rest[match.end() :]
    elif rest.startswith(":"):
        raise _error(text, "missing protocol scheme")
    if not rest.startswith("/"):
        if scheme:
            return _Parts(scheme, "", "", query)  # opaque, e.g. mailto:
        raise _error(text, "invalid URI for request")
    host = ""
    if scheme and rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        rest = slash + path
        host = authority.rpartition("@")[2]
        _check_host(text, host)
    return _Parts(scheme, host, rest, query)


def _check_host(text: str, host: str) -> None:
    if host.startswith("["):
        end = host.find("]")
        if end < 0:
            raise _error(text, "missing ']' in host")
        if not _PORT.match(host[end + 1 :].removeprefix(":")) or (
            host[end + 1 :] and not host[end + 1 :].startswith(":")
        ):
            raise _error(text, f'invalid port "{host[end + 1 :]}" after host')
        return
    name, colon, port = host.rpartition(":")
    if colon and not _PORT.match(port):
        raise _error(text, f'invalid port ":{port}" after host')
    if not _HOST_CHARS.match(name if colon else host):
        raise _error(text, "invalid character in host name")


def _parts(value: Any) -> _Parts:
    if isinstance(value, Mapping) and URL_TAG in value:
        return _split(str(value[URL_TAG]))
    raise ValueError("no such overload: not a URL")


def request_uri_error(text: str) -> str | None:
    """Go's ``url.ParseRequestURI(text)`` error text, None when it parses."""
    try:
        _split(text)
    except ValueError as error:
        return str(error).removeprefix("URL parse error during conversion from string: ")
    return None


def url(text: str) -> dict[str, str]:
    _split(text)
    return {URL_TAG: text}


def is_url(text: str) -> bool:
    try:
        _split(text)
    except ValueError:
        return False
    return True


def get_scheme(value: Any) -> str:
    return _parts(value).scheme


def get_host(value: Any) -> str:
    return _parts(value).host


def _host_port(host: str) -> tuple[str, str]:
    """Go's ``splitHostPort`` on ``u.Host``."""
    name, colon, port = host.rpartition(":")
    if not colon or not _PORT.match(port) or (name.startswith("[") and not name.endswith("]")):
        name, port = host, ""
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    return name, port


def get_hostname(value: Any) -> str:
    return _host_port(_parts(value).host)[0]


def get_port(value: Any) -> str:
    return _host_port(_parts(value).host)[1]


def get_escaped_path(value: Any) -> str:
    path = _parts(value).path
    if _PATH_CHARS.match(path):
        return path
    return quote(unquote(path), safe=_PATH_SAFE)


def get_query(value: Any) -> dict[str, list[str]]:
    query: dict[str, list[str]] = {}
    for key, item in parse_qsl(_parts(value).query, keep_blank_values=True):
        query.setdefault(key, []).append(item)
    return query
