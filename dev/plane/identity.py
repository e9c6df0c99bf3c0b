"""Kubeconfig files, and an API server identity kept across starts (ControlPlane.identity_dir):
for a client that loads its kubeconfig once and outlives a restart of the cluster, like Tilt."""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

import yaml

from plane.pki import make_certs
from plane.processes import free_port


def write_kubeconfig_file(path: Path, server: str, ca_file: Path, token: str, *, user: str = "user") -> Path:
    """A kubeconfig for `server` (trusting `ca_file`) and bearer `token`. Written to a temp name and
    renamed, so a watcher never reads a half-written file."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "local",
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_file.read_bytes()).decode(),
                },
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": user}}],
        "current-context": "local",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(yaml.safe_dump(config, sort_keys=False))
    tmp.chmod(0o600)
    tmp.replace(path)
    return path


@dataclass(frozen=True)
class KeptIdentity:
    port: int
    admin_token: str
    kubeconfig: Path


def kept_identity(directory: Path, address: str) -> KeptIdentity:
    """The API server identity kept in `directory` for `address`, made on first use: a port free
    now, certificates, an admin token and its kubeconfig."""
    record, kubeconfig = directory / "identity.json", directory / "admin.kubeconfig"
    try:
        kept = json.loads(record.read_text())
        if kept["address"] == address and kubeconfig.exists():
            return KeptIdentity(int(kept["port"]), str(kept["admin_token"]), kubeconfig)
    except (OSError, ValueError, KeyError):
        pass
    shutil.rmtree(directory / "pki", ignore_errors=True)
    make_certs(directory / "pki", address)
    port, token = free_port(), secrets.token_hex(16)
    record.write_text(json.dumps({"address": address, "port": port, "admin_token": token}))
    record.chmod(0o600)
    write_kubeconfig_file(kubeconfig, f"https://{address}:{port}", directory / "pki" / "ca.crt", token, user="admin")
    return KeptIdentity(port, token, kubeconfig)
