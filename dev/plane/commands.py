"""The command lines of the control plane's own processes (etcd, kube-apiserver,
kube-controller-manager), from a ControlPlane's settings and ports."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from plane.constants import APISERVER, CONTROLLER_MANAGER, ETCD, SERVICE_CLUSTER_IP_RANGE
from plane.processes import Process


class ControlPlane(Protocol):
    """What the command lines read of a control plane (plane.control_plane.ControlPlane): its
    settings, ports and directory; a protocol, so that this module does not import that one."""

    workdir: Path
    address: str
    apiserver_port: int
    controller_manager_port: int
    authorization_modes: tuple[str, ...]
    service_account_admission: bool
    watch_cache: bool
    extra_apiserver_args: tuple[str, ...]
    extra_controller_manager_args: tuple[str, ...]
    controllers: tuple[str, ...]

    @property
    def server(self) -> str: ...

    @property
    def etcd_url(self) -> str: ...

    def binary(self, name: str) -> Path: ...


def etcd(plane: ControlPlane, peer_port: int) -> Process:
    return Process(
        ETCD,
        [
            str(plane.binary(ETCD)),
            "--name=local",
            f"--data-dir={plane.workdir / 'etcd'}",
            f"--listen-client-urls={plane.etcd_url}",
            f"--advertise-client-urls={plane.etcd_url}",
            f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
            f"--initial-cluster=local=http://127.0.0.1:{peer_port}",
            "--unsafe-no-fsync",  # test data: durability across power loss is irrelevant
            "--log-level=warn",
        ],
        plane.workdir / "etcd.log",
    )


def apiserver(plane: ControlPlane, pki: Path) -> Process:
    return Process(
        APISERVER,
        [
            str(plane.binary(APISERVER)),
            f"--etcd-servers={plane.etcd_url}",
            f"--bind-address={plane.address}",
            f"--advertise-address={plane.address}",
            f"--secure-port={plane.apiserver_port}",
            f"--cert-dir={plane.workdir / 'apiserver-certs'}",
            f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--token-auth-file={plane.workdir / 'tokens.csv'}",
            f"--authorization-mode={','.join(plane.authorization_modes)}",
            # Without the serviceaccount controller the plugin would reject every pod whose
            # ServiceAccount does not exist yet.
            *([] if plane.service_account_admission else ["--disable-admission-plugins=ServiceAccount"]),
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            "--allow-privileged=true",
            f"--service-account-issuer={plane.server}/",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            f"--watch-cache={'true' if plane.watch_cache else 'false'}",
            # The default reconciler rejects 127.0.0.1 as an Endpoints address and logs an
            # error every 10 s; nothing routes to the `kubernetes` Service on loopback anyway.
            *(["--endpoint-reconciler-type=none"] if plane.address == "127.0.0.1" else []),
            *plane.extra_apiserver_args,
        ],
        plane.workdir / "kube-apiserver.log",
    )


def controller_manager(plane: ControlPlane, pki: Path) -> Process:
    return Process(
        CONTROLLER_MANAGER,
        [
            str(plane.binary(CONTROLLER_MANAGER)),
            f"--kubeconfig={plane.workdir / 'kcm.kubeconfig'}",
            "--leader-elect=false",
            f"--controllers={','.join(plane.controllers)}",
            # For the root-CA publisher (the kube-root-ca.crt ConfigMap every pod's token
            # volume projects) and the token controller, when they run.
            f"--root-ca-file={pki / 'ca.crt'}",
            f"--service-account-private-key-file={pki / 'sa.key'}",
            "--bind-address=127.0.0.1",
            f"--secure-port={plane.controller_manager_port}",
            f"--cert-dir={plane.workdir / 'kcm-certs'}",
            *plane.extra_controller_manager_args,
        ],
        plane.workdir / "kube-controller-manager.log",
    )
