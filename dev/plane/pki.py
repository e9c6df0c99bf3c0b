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


_EC_KEY = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")


def make_ca(pki: Path, name: str, common_name: str) -> Path:
    """A self-signed CA, `<name>.crt` and `<name>.key` in `pki` (a P-256 key, ten years); its
    certificate's path."""
    openssl("req", "-x509", *_EC_KEY, "-keyout", f"{name}.key", "-out", f"{name}.crt", "-days", "3650",
             "-subj", f"/CN={common_name}", cwd=pki)  # fmt: skip
    return pki / f"{name}.crt"


def sign_client(pki: Path, ca: str, name: str, subject: str) -> tuple[Path, Path]:
    """A client certificate for `subject` (`/O=.../CN=...`) signed by the CA `ca` of `pki`:
    `<name>.crt` and `<name>.key`, their paths."""
    openssl("req", *_EC_KEY, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=pki)
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key", "-CAcreateserial",
             "-days", "3650", "-out", f"{name}.crt", cwd=pki)  # fmt: skip
    return pki / f"{name}.crt", pki / f"{name}.key"


def make_certs(pki: Path, address: str = "127.0.0.1") -> None:
    """A throwaway CA, an apiserver serving cert for 127.0.0.1/localhost (and `address`), and the
    ServiceAccount signing keypair. P-256 keys: generating them takes milliseconds where RSA takes
    seconds."""
    if shutil.which("openssl") is None:
        raise ControlPlaneError("openssl is required to make the control plane's certificates")
    pki.mkdir(parents=True, exist_ok=True)
    make_ca(pki, "ca", "provider-kserve-local-ca")
    openssl("req", *_EC_KEY, "-keyout", "apiserver.key", "-out", "apiserver.csr", "-subj", "/CN=kube-apiserver",
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
