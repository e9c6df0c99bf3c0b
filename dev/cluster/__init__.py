"""The node mode of the local cluster: the control plane of dev/plane plus a real node
(containerd, kubelet, kube-proxy, kube-scheduler) on this host, for the end-to-end tests and
`make demo-cluster`.

- `host`: the host a node needs (commands, packages, the host lock, sysctls, fixed directories);
- `iptables`, `mounts_cgroups`: the node's iptables chains and rules, its mounts, cgroups and stray
  processes;
- `host_record`: `HostChanges`, the record of every host change, written first and undone by
  teardown (or by the next start, after a crash);
- `snapshot`: the host state the tests compare before and after;
- `runtime`: containerd with its own root, state and socket, and image import;
- `node`: `NodeCluster`, which starts and stops all of it.
"""
