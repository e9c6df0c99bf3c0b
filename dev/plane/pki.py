"""The control plane's certificates: a CA and serving/client certificates made with openssl."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from plane.constants import KUBERNETES_SERVICE_IP, ControlPlaneError


def openssl(*args: str, cwd: Path) -> None:
    """`openssl ARGS` in `cwd`; ControlPlaneError with its stderr if it fails."""
    proc = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ControlPlaneError(f"openssl {' '.join(args)} failed: {proc.stderr.strip()}")


def make_certs(pki: Path, address: str = "127.0.0.1") -> None:
    """A throwaway CA, an apiserver serving cert for 127.0.0.1/localhost (and `address`), and the
    ServiceAccount signing keypair. P-256 keys: generating them takes milliseconds where RSA takes
    seconds."""
    if shutil.which("openssl") is None:
        raise ControlPlaneError("openssl is required to make the control plane's certificates")
    pki.mkdir(parents=True, exist_ok=True)
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "3650",
             "-subj", "/CN=provider-kserve-local-ca", cwd=pki)  # fmt: skip
    openssl("req", *ec, "-keyout", "apiserver.key", "-out", "apiserver.csr", "-subj", "/CN=kube-apiserver",
             cwd=pki)  # fmt: skip
    (pki / "apiserver.ext").write_text(
        f"subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
        f"DNS:kubernetes.default.svc,IP:{KUBERNETES_SERVICE_IP}{'' if address == '127.0.0.1' else ',IP:' + address}\n"
        "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\n"
    )
    openssl("x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "apiserver.crt", "-days", "3650", "-extfile", "apiserver.ext", cwd=pki)  # fmt: skip
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "sa.key", cwd=pki)
    openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)
