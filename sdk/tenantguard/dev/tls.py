"""A small private CA for trying the plane over HTTPS (``tenantguard keys tls``) and for tests.

Not a certificate authority for production: no revocation, no renewal, EC P-256 keys kept in
files. It makes what ``--tls-cert/--tls-key/--tls-client-ca`` on the plane and ``--plane-ca``,
``--plane-client-cert/--plane-client-key`` on its clients read; private keys are written 0600
(:func:`tenantguard.identity.keys.write_private`), certificates 0644.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tenantguard.errors import ConfigError
from tenantguard.identity.keys import write_private

DEFAULT_DAYS: Final = 90
MAX_DAYS: Final = 825  # what browsers accepted for a leaf certificate at most


@dataclass(frozen=True, slots=True)
class Issued:
    """A certificate and its private key, in memory."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    def write(self, cert_path: Path, key_path: Path) -> None:
        """The certificate (PEM) and the key (PKCS#8 PEM, mode 0600)."""
        cert_path.parent.mkdir(parents=True, exist_ok=True)
        cert_path.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))
        write_private(key_path, self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                       serialization.NoEncryption()))

    def issue(self, name: str, *, hosts: Iterable[str] = (), client: bool = False,
              days: int = DEFAULT_DAYS) -> Issued:
        """A leaf signed by this CA: a server certificate naming ``hosts`` (DNS names or IP
        addresses), or with ``client`` one for TLS client authentication."""
        names = [_general_name(h) for h in hosts]
        if not client and not names:
            raise ConfigError("a server certificate needs at least one --host")
        key = ec.generate_private_key(ec.SECP256R1())
        usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
        builder = (_builder(name, key, self.cert.subject, days)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return Issued(builder.sign(self.key, hashes.SHA256()), key)


def new_ca(name: str, *, days: int = DEFAULT_DAYS) -> Issued:
    """A self-signed CA that signs leaves only (path length 0)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    usage = x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                          key_encipherment=False, data_encipherment=False, key_agreement=False,
                          encipher_only=False, decipher_only=False)
    cert = (_builder(name, key, subject, days)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(usage, critical=True).sign(key, hashes.SHA256()))
    return Issued(cert, key)


def _builder(name: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name, days: int) -> x509.CertificateBuilder:
    if not 1 <= days <= MAX_DAYS:
        raise ConfigError(f"certificate lifetime must be within 1..{MAX_DAYS} days")
    now = datetime.datetime.now(datetime.UTC)
    return (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(issuer).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=days)))


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        pass
    if not host or len(host) > 253 or any(c.isspace() or c in "/:@" for c in host):
        raise ConfigError(f"--host {host!r:.80} is neither an IP address nor a DNS name")
    return x509.DNSName(host)
