"""TLS for the protected HTTP endpoints: a mounted certificate, else a self-signed one made at start.

Bearer tokens must not cross the pod network in clear. Like controller-runtime's secure metrics
serving, the provider makes its own self-signed certificate when none is given (Prometheus then
scrapes with `insecureSkipVerify`, the norm for in-cluster metrics); mount a real one (tls.crt,
tls.key, e.g. from cert-manager) with `--tls-cert-dir` to have it verified.
"""

from __future__ import annotations

import datetime
import socket
import ssl
import tempfile
from pathlib import Path


def server_context(cert_dir: str | None) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_dir:
        context.load_cert_chain(str(Path(cert_dir) / "tls.crt"), str(Path(cert_dir) / "tls.key"))
        return context
    cert, key = self_signed(socket.gethostname())
    # ssl loads only from files; /tmp is the container's one writable path.
    with tempfile.TemporaryDirectory(prefix="provider-tls-") as tmp:
        cert_file, key_file = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
        cert_file.write_bytes(cert)
        key_file.touch(mode=0o600)
        key_file.write_bytes(key)
        context.load_cert_chain(str(cert_file), str(key_file))
    return context


def self_signed(hostname: str) -> tuple[bytes, bytes]:
    """(certificate, private key) as PEM, valid for a year, for `hostname` and localhost."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostname[:64] or "provider")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(hostname), x509.DNSName("localhost")]), False)
        .sign(key, hashes.SHA256())
    )
    pem_key = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), pem_key
