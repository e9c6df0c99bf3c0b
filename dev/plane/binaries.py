"""Where the control-plane binaries and the shared CRDs are (KUBEBUILDER_ASSETS, or built once by
dev/build-controlplane.sh)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from plane.constants import APISERVER, BUILD_SCRIPT, CONTROLLER_MANAGER, ETCD, REPO_ROOT, ControlPlaneError


def find_binaries(*, controller_manager: bool = True) -> Path:
    """The directory holding etcd and kube-apiserver (and kube-controller-manager if asked)."""
    required = [ETCD, APISERVER] + ([CONTROLLER_MANAGER] if controller_manager else [])
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if assets:
        require_executables(Path(assets), required, "KUBEBUILDER_ASSETS")
        return Path(assets)
    if not BUILD_SCRIPT.is_file():
        raise ControlPlaneError(f"KUBEBUILDER_ASSETS is not set and {BUILD_SCRIPT} is missing")
    proc = subprocess.run(["bash", str(BUILD_SCRIPT), "controlplane"], stdout=subprocess.PIPE, text=True, check=False)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise ControlPlaneError(
            f"{BUILD_SCRIPT} failed (exit {proc.returncode}); its log is above. It needs `go` on PATH "
            "and the Go module proxy, or set KUBEBUILDER_ASSETS to a directory with " + ", ".join(required)
        )
    bin_dir = Path(lines[-1])
    require_executables(bin_dir, required, str(BUILD_SCRIPT))
    return bin_dir


def require_executables(directory: Path, names: Sequence[str], origin: str) -> None:
    """ControlPlaneError naming `origin` unless `directory` holds every one of `names`, executable."""
    missing = [n for n in names if not os.access(directory / n, os.X_OK)]
    if missing:
        raise ControlPlaneError(f"{origin}: {directory} has no executable {', '.join(missing)}")


# -- CRD files --------------------------------------------------------------------------------


def shared_dir() -> Path:
    override = os.environ.get("PROVIDER_KSERVE_SHARED")
    return Path(override) if override else REPO_ROOT.parent / "shared"


def crds_dir() -> Path:
    return shared_dir() / "crds"
