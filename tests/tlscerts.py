"""Real X.509 material for TLS tests: CAs, server and client certificates (EC P-256), keys written 0600."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from tenantguard.keys import write_private


@dataclass(frozen=True)
class Issued:
    cert: Path
    key: Path


@dataclass(frozen=True)
class Ca:
    cert_obj: x509.Certificate
    key_obj: ec.EllipticCurvePrivateKey
    cert: Path

    def issue(self, directory: Path, name: str, *, hosts: tuple[str, ...] = (), client: bool = False) -> Issued:
        """A leaf certificate for ``hosts`` (DNS names or IPs) or, with ``client``, for TLS client auth."""
        key = ec.generate_private_key(ec.SECP256R1())
        usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
        builder = _builder(name, key, self.cert_obj.subject).add_extension(
            x509.BasicConstraints(ca=False, path_length=None), critical=True).add_extension(
            x509.ExtendedKeyUsage([usage]), critical=False)
        if hosts:
            builder = builder.add_extension(x509.SubjectAlternativeName([_san(h) for h in hosts]), critical=False)
        cert = builder.sign(self.key_obj, hashes.SHA256())
        return _write(directory, name, cert, key)


def make_ca(directory: Path, name: str) -> Ca:
    """A self-signed CA; its certificate at DIRECTORY/NAME.pem."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = _builder(name, key, subject).add_extension(
        x509.BasicConstraints(ca=True, path_length=0), critical=True).add_extension(
        x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                      key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
                      decipher_only=False), critical=True).sign(key, hashes.SHA256())
    path = directory / f"{name}.pem"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return Ca(cert, key, path)


def _builder(name: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(issuer).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1)))


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _write(directory: Path, name: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> Issued:
    cert_path, key_path = directory / f"{name}.pem", directory / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    write_private(key_path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                              serialization.NoEncryption()))
    return Issued(cert_path, key_path)


@dataclass(frozen=True)
class Pki:
    """One CA with a server certificate for 127.0.0.1 and localhost and a client certificate; a second
    CA (another organisation) with its own client certificate; a server certificate for another host."""

    ca: Ca
    server: Issued
    client: Issued
    other_ca: Ca
    other_client: Issued
    wrong_host: Issued


def make_pki(directory: Path) -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    ca, other = make_ca(directory, "ca"), make_ca(directory, "other-ca")
    return Pki(ca=ca, server=ca.issue(directory, "server", hosts=("127.0.0.1", "localhost")),
               client=ca.issue(directory, "client", client=True), other_ca=other,
               other_client=other.issue(directory, "other-client", client=True),
               wrong_host=ca.issue(directory, "wrong-host", hosts=("plane.elsewhere.example",)))
