"""The local control plane: `ControlPlane` (etcd + kube-apiserver + kube-controller-manager on
127.0.0.1) and what its users share: the CRDs and objects it installs, kubeconfigs and a kept
identity, the processes it supervises and the helpers of the command lines.

- `control_plane`: the `ControlPlane` class; `supervision` its mixin for processes started beside it;
- `commands`: the command lines of etcd, kube-apiserver and kube-controller-manager;
- `crds`: the CRDs and presets of shared/crds, namespaces and ServiceAccount tokens;
- `identity`, `pki`: kubeconfigs, an identity kept across starts, the certificates;
- `processes`: child processes, their work directories, stop at exit; `etcd`: revision, compaction;
- `binaries`, `constants`: where the binaries and CRDs are; names and fixed settings.

The command line is dev/controlplane.py, which adds the KServe stack (dev/kservestack) on request.
"""

from __future__ import annotations

from plane.binaries import crds_dir, find_binaries, require_executables, shared_dir
from plane.constants import (
    BUILD_SCRIPT,
    CRD,
    DEFAULT_CONTROLLERS,
    KUBERNETES_SERVICE_IP,
    LLM_ISVC_CONFIG,
    NAMESPACE,
    REPO_ROOT,
    SERVICE_CLUSTER_IP_RANGE,
    ControlPlaneError,
)
from plane.control_plane import ControlPlane
from plane.crds import (
    create_or_replace,
    delete_crd,
    ensure_namespace,
    install_crds,
    install_llm_presets,
    load_crds,
    retry_transient,
    service_account_token,
    transient,
    wait_established,
    wait_served,
)
from plane.identity import KeptIdentity, kept_identity, write_kubeconfig_file
from plane.pki import openssl
from plane.processes import Process, block_until_signal, format_rss, free_port, http_ok, vm_hwm_kib

__all__ = [
    "BUILD_SCRIPT",
    "CRD",
    "DEFAULT_CONTROLLERS",
    "KUBERNETES_SERVICE_IP",
    "LLM_ISVC_CONFIG",
    "NAMESPACE",
    "REPO_ROOT",
    "SERVICE_CLUSTER_IP_RANGE",
    "ControlPlane",
    "ControlPlaneError",
    "KeptIdentity",
    "Process",
    "block_until_signal",
    "crds_dir",
    "create_or_replace",
    "delete_crd",
    "ensure_namespace",
    "find_binaries",
    "format_rss",
    "free_port",
    "http_ok",
    "install_crds",
    "install_llm_presets",
    "kept_identity",
    "load_crds",
    "openssl",
    "require_executables",
    "retry_transient",
    "service_account_token",
    "shared_dir",
    "transient",
    "vm_hwm_kib",
    "wait_established",
    "wait_served",
    "write_kubeconfig_file",
]
