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


def serving_context(cert_file: str | None, key_file: str | None, wall: float) -> ssl.SSLContext:
    """A server context (TLS 1.2+) for the given pair, else a self-signed one
    valid from ``wall`` (Unix time, from the injected clock)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
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
