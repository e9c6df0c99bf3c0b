"""The node's components configured: the CNI bridge, the kubelet, kube-proxy, and what the API server
needs towards them (a client certificate for the kubelet, an audit policy). Pure file writing under
the node's work directory; `NodeCluster` starts the processes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from plane.pki import make_ca, sign_client

NODE_NAME = "local-node"
BRIDGE = "pkserve0"
POD_SUBNET = "10.244.0.0/24"
NODE_IP = "10.244.0.1"
CGROUP = "provider-kserve-node"


# The CA the kubelet takes client certificates of (`<name>.crt`/`.key` in the node's pki/).
KUBELET_CLIENT_CA = "kubelet-client-ca"


def audit_log_path(workdir: Path) -> Path:
    return workdir / "audit.log"


def apiserver_kubelet_client_args(workdir: Path) -> tuple[str, ...]:
    """A CA of its own for the API server's client certificate towards the kubelet (exec, logs,
    port-forward): the kubelet accepts only that CA's certificates, nothing anonymous."""
    pki = workdir / "pki"
    pki.mkdir(parents=True)
    make_ca(pki, KUBELET_CLIENT_CA, "provider-kserve-kubelet-client-ca")
    certificate, key = sign_client(
        pki, KUBELET_CLIENT_CA, "apiserver-kubelet-client", "/O=system:masters/CN=kube-apiserver-kubelet-client"
    )
    return (
        f"--kubelet-client-certificate={certificate}",
        f"--kubelet-client-key={key}",
        "--kubelet-preferred-address-types=InternalIP",
    )


def audit_args(workdir: Path) -> tuple[str, ...]:
    """An audit log of every write (who, from which pod, when): how the end-to-end tests tell
    which provider pod wrote what, e.g. that two never reconcile at once."""
    policy = workdir / "audit-policy.yaml"
    policy.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "audit.k8s.io/v1",
                "kind": "Policy",
                "omitStages": ["RequestReceived"],
                "rules": [
                    {"level": "Metadata", "verbs": ["create", "update", "patch", "delete", "deletecollection"]},
                    {"level": "None"},
                ],
            }
        )
    )
    return (f"--audit-policy-file={policy}", f"--audit-log-path={audit_log_path(workdir)}", "--audit-log-maxbackup=1")


def write_cni_config(cni_dir: Path) -> None:
    conflist = {
        "cniVersion": "1.0.0",
        "name": "provider-kserve",
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                # Pods talk to the host and to each other only (see the FORWARD guard).
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": POD_SUBNET, "gateway": NODE_IP}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(cni_dir / "ipam"),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }
    (cni_dir / "net.d").mkdir(parents=True)
    (cni_dir / "net.d" / "10-provider-kserve.conflist").write_text(json.dumps(conflist, indent=1))


def kubelet_args(workdir: Path, *, port: int, healthz_port: int, runtime_endpoint: str, kubeconfig: Path) -> list[str]:
    """The kubelet's command line and its KubeletConfiguration file."""
    config: dict[str, Any] = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": NODE_IP,
        "port": port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": healthz_port,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": False},
            "x509": {"clientCAFile": str(workdir / "pki" / f"{KUBELET_CLIENT_CA}.crt")},
        },
        "authorization": {"mode": "AlwaysAllow"},
        "containerRuntimeEndpoint": runtime_endpoint,
        "cgroupDriver": "cgroupfs",
        # Everything the node runs goes under one cgroup of ours, removed at teardown.
        "cgroupRoot": f"/{CGROUP}",
        # This host has cgroup v1, which the 1.34 kubelet refuses unless told otherwise.
        "failCgroupV1": False,
        "failSwapOn": False,
        # Root here cannot lower an oom_score_adj (no CAP_SYS_RESOURCE).
        "oomScoreAdj": 0,
        "clusterDomain": "cluster.local",
        "resolvConf": "/etc/resolv.conf",
        # Images come from archives and cannot be pulled again: never garbage-collect them, and
        # do not evict pods because other work on a shared machine fills its disk.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        "podLogsDir": str(workdir / "pod-logs"),
        "volumePluginDir": str(workdir / "volume-plugins"),
        "maxPods": 50,
        "serializeImagePulls": False,
    }
    path = workdir / "kubelet.yaml"
    path.write_text(yaml.safe_dump(config))
    return [
        f"--config={path}",
        f"--kubeconfig={kubeconfig}",
        f"--root-dir={workdir / 'kubelet'}",
        f"--cert-dir={workdir / 'kubelet-certs'}",
        f"--hostname-override={NODE_NAME}",
        f"--node-ip={NODE_IP}",
    ]


def kube_proxy_config(workdir: Path, *, kubeconfig: Path, healthz_port: int, metrics_port: int) -> Path:
    """kube-proxy's KubeProxyConfiguration file."""
    config = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "mode": "iptables",
        "hostnameOverride": NODE_NAME,
        "clusterCIDR": POD_SUBNET,
        "bindAddress": NODE_IP,
        "healthzBindAddress": f"127.0.0.1:{healthz_port}",
        "metricsBindAddress": f"127.0.0.1:{metrics_port}",
        # NodePorts on the node's address only; no route_localnet for localhost NodePorts.
        "nodePortAddresses": [f"{NODE_IP}/32"],
        "iptables": {"localhostNodePorts": False},
        # Zero leaves the host's conntrack sysctls as they are.
        "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
    }
    path = workdir / "kube-proxy.yaml"
    path.write_text(yaml.safe_dump(config))
    return path
