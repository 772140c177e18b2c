"""Key material for the local control plane.

Only the service-account signing key is made here: the apiserver writes its
own self-signed serving certificate into ``--cert-dir``, and the admin
authenticates with a static token.
"""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec


def write_service_account_key(path: Path) -> None:
    """Write a fresh ECDSA P-256 private key (PEM) unless one is already there."""
    if path.exists():
        return
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        encoding=serialization.Encoding.PEM,
        format=serialization.PrivateFormat.TraditionalOpenSSL,
        encryption_algorithm=serialization.NoEncryption(),
    )
    path.write_bytes(pem)
    path.chmod(0o600)
