"""containerd for the node: Debian's containerd with its own root, state, socket and runc root under
the cluster's work directory, so it neither sees nor touches a containerd the host may run.

Images come from archives (dev/build-image.sh), never from a registry: `ctr images import` puts
them into the `k8s.io` namespace the kubelet's CRI uses, and the chart runs them with the
`provider-kserve` repository name the archives carry.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from cluster.host import run
from plane import ControlPlaneError, Process

# The pod sandbox image dev/build-image.sh builds from Kubernetes' pause.c. A name without a
# registry: the CRI resolves it in its image store, where the import put it.
SANDBOX_IMAGE = "provider-kserve-pause:3.10"
CRI_NAMESPACE = "k8s.io"


def containerd_config(root: Path, state: Path, socket: Path, cni_conf_dir: Path, cni_bin_dir: Path) -> str:
    return f"""version = 2
root = "{root}"
state = "{state}"

[grpc]
  address = "{socket}"

[ttrpc]
  address = "{socket}.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "{root}/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{SANDBOX_IMAGE}"
  # Root here lacks CAP_SYS_RESOURCE: lowering a process's oom_score_adj below containerd's own
  # fails, and without this every sandbox fails with "can't get final child's PID from pipe".
  restrict_oom_score_adj = true
  # Loading containerd's AppArmor profile would change the host's kernel policy.
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{state}/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{cni_bin_dir}"
    conf_dir = "{cni_conf_dir}"
    max_conf_num = 1
"""


@dataclass
class Containerd:
    workdir: Path
    cni_conf_dir: Path
    cni_bin_dir: Path
    process: Process | None = field(default=None, init=False)

    @property
    def socket(self) -> Path:
        return self.workdir / "containerd.sock"

    @property
    def endpoint(self) -> str:
        return f"unix://{self.socket}"

    def start(self, timeout: float = 30.0) -> None:
        config = self.workdir / "config.toml"
        self.workdir.mkdir(parents=True, exist_ok=True)
        root, state = self.workdir / "root", self.workdir / "state"
        config.write_text(containerd_config(root, state, self.socket, self.cni_conf_dir, self.cni_bin_dir))
        self.process = Process("containerd", ["containerd", "--config", str(config)], self.workdir / "containerd.log")
        self.process.start()
        deadline = time.monotonic() + timeout
        while not self.ctr("version", check=False):
            if not self.process.running():
                raise ControlPlaneError(f"containerd exited during startup; log tail:\n{self.process.log_tail()}")
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"containerd not ready after {timeout:.0f}s:\n{self.process.log_tail()}")
            time.sleep(0.1)

    def ctr(self, *args: str, check: bool = True) -> str:
        return run("ctr", "--address", str(self.socket), "--namespace", CRI_NAMESPACE, *args, check=check)

    def import_image(self, archive: Path) -> list[str]:
        """Import (and unpack) a docker or OCI archive; returns the image names it brought."""
        out = self.ctr("images", "import", str(archive))
        return re.findall(r"^unpacking (\S+) ", out, flags=re.MULTILINE)

    def images(self) -> list[str]:
        return self.ctr("images", "list", "--quiet").split()

    def stop(self, grace: float = 10.0) -> None:
        if self.process is not None:
            self.process.stop(grace)

    def peak_kib(self) -> int:
        return self.process.peak_kib() if self.process is not None else 0
