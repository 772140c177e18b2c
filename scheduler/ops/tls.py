"""The ops port's TLS: the given certificate and key, or a self-signed pair
made at start-up, as kube-scheduler does without ``--tls-cert-file``.

The self-signed certificate (ECDSA P-256, valid a year, for ``localhost``,
``127.0.0.1`` and the host name) is written only to a private temporary
directory long enough for ``ssl`` to load it, then removed: nothing is left on
disk (the root filesystem is read-only in the Deployment; ``/tmp`` is an
emptyDir). ``cryptography`` makes the key and certificate.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import tempfile
from collections.abc import Sequence
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

SELF_SIGNED_DAYS = 365


def self_signed_pem(hostnames: list[str], now: datetime.datetime) -> tuple[bytes, bytes]:
    """(certificate PEM, private key PEM) for ``hostnames`` plus loopback."""
    key = ec.generate_private_key(ec.SECP256R1())
    common = hostnames[0] if hostnames else "localhost"
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{common}@pyscheduler")])
    alt: list[x509.GeneralName] = [x509.DNSName(host) for host in dict.fromkeys(hostnames)]
    alt.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=SELF_SIGNED_DAYS))
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return certificate.public_bytes(serialization.Encoding.PEM), key_pem


# Go's cipher suite names (kube-scheduler's --tls-cipher-suites) -> OpenSSL's.
# The TLS 1.3 suites cannot be chosen (in Go neither): accepted, not applied.
GO_CIPHER_SUITES = {
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA": "DES-CBC3-SHA",
    "TLS_RSA_WITH_RC4_128_SHA": "RC4-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA": "ECDHE-ECDSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA": "ECDHE-RSA-DES-CBC3-SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA": "ECDHE-RSA-RC4-SHA",
}
TLS13_SUITES = frozenset(
    {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}
)


def openssl_cipher_list(names: Sequence[str]) -> str | None:
    """The OpenSSL cipher string for Go suite names (None: OpenSSL's default).
    ValueError names an unknown suite, with upstream's wording."""
    chosen = []
    for name in names:
        if name in TLS13_SUITES:
            continue
        if name not in GO_CIPHER_SUITES:
            raise ValueError(f"Cipher suite {name} not supported or doesn't exist")
        chosen.append(GO_CIPHER_SUITES[name])
    return ":".join(dict.fromkeys(chosen)) or None


def serving_context(
    cert_file: str | None,
    key_file: str | None,
    wall: float,
    *,
    min_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2,
    cipher_suites: Sequence[str] = (),
) -> ssl.SSLContext:
    """A server context for the given pair, else a self-signed one valid from
    ``wall`` (Unix time, from the injected clock): TLS ``min_version`` and up,
    TLS 1.2 suites limited to ``cipher_suites`` (Go names) when given."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = min_version
    ciphers = openssl_cipher_list(cipher_suites)
    if ciphers:
        try:
            context.set_ciphers(ciphers)
        except ssl.SSLError as error:
            raise ValueError(f"--tls-cipher-suites: OpenSSL accepts none of {ciphers}") from error
    if cert_file and key_file:
        context.load_cert_chain(cert_file, key_file)
        return context
    hostnames = ["localhost", socket.gethostname()]
    cert_pem, key_pem = self_signed_pem(
        hostnames, datetime.datetime.fromtimestamp(wall, datetime.UTC)
    )
    with tempfile.TemporaryDirectory(prefix="pyscheduler-tls-") as directory:
        cert_path, key_path = Path(directory, "tls.crt"), Path(directory, "tls.key")
        cert_path.write_bytes(cert_pem)
        key_path.touch(mode=0o600)
        key_path.write_bytes(key_pem)
        context.load_cert_chain(cert_path, key_path)
    return context
