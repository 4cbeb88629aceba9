"""A throw-away certificate authority for the local secured broker: made at start-up, never checked in.

`make_tls_files` writes a CA, a broker certificate (for 127.0.0.1 and localhost) and a client certificate,
each key beside its certificate as PEM, which both Kafka (`ssl.keystore.type=PEM`) and Python's ssl module read,
so no JDK keystore is needed. An `untrusted` client certificate, signed by a second CA the broker does not know,
lets tests check what a client with the wrong certificate sees.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALID_DAYS = 30


@dataclass(frozen=True)
class TlsFiles:
    """Paths of the PEM files `make_tls_files` wrote."""

    ca: Path  # the CA certificate: the clients' ssl_cafile and the broker's truststore
    broker: Path  # the broker's key and certificate chain in one file (its PEM keystore)
    client_cert: Path
    client_key: Path
    untrusted_cert: Path  # signed by another CA
    untrusted_key: Path


def tls_files(directory: Path) -> TlsFiles:
    """The paths `make_tls_files` writes in `directory`."""
    return TlsFiles(
        ca=directory / "ca.pem",
        broker=directory / "broker.pem",
        client_cert=directory / "client.pem",
        client_key=directory / "client.key",
        untrusted_cert=directory / "untrusted.pem",
        untrusted_key=directory / "untrusted.key",
    )


def make_tls_files(directory: Path, *, client_name: str = "streamlet-client") -> TlsFiles:
    """Write a fresh CA, broker and client certificates into `directory` (keys readable by the owner only)."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = _authority("streamlet local CA")
    broker_key, broker_cert = _leaf("localhost", ca_key, ca_cert, server=True)
    client_key, client_cert = _leaf(client_name, ca_key, ca_cert, server=False)
    other_key, other_cert = _authority("an unknown CA")
    untrusted_key, untrusted_cert = _leaf(client_name, other_key, other_cert, server=False)
    files = tls_files(directory)
    files.ca.write_bytes(_cert_pem(ca_cert))
    _write_private(files.broker, _key_pem(broker_key) + _cert_pem(broker_cert) + _cert_pem(ca_cert))
    files.client_cert.write_bytes(_cert_pem(client_cert))
    _write_private(files.client_key, _key_pem(client_key))
    files.untrusted_cert.write_bytes(_cert_pem(untrusted_cert))
    _write_private(files.untrusted_key, _key_pem(untrusted_key))
    return files


def _authority(name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = (
        _builder(subject, subject, key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )  # key_cert_sign, crl_sign
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _leaf(
    name: str, ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate, *, server: bool
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    # the broker's certificate serves clients and, as the broker's own client identity, inter-broker links
    usages = (
        [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
        if server
        else [ExtendedKeyUsageOID.CLIENT_AUTH]
    )
    builder = (
        _builder(subject, ca_cert.subject, key)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
    return key, builder.sign(ca_key, hashes.SHA256())


def _builder(subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=_VALID_DAYS))
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    # PKCS#8: the form Kafka's PEM keystore accepts
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _write_private(path: Path, data: bytes) -> None:
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_bytes(data)
