"""The node mode of the local cluster: the control plane of dev/controlplane.py plus a real node
(containerd, kubelet, kube-proxy, kube-scheduler) on this host, for the end-to-end tests and
`make demo-cluster`.

- `host`: the host changes a node needs (packages, bridge, sysctls, iptables, cgroups, mounts,
  directories), each recorded and undone by teardown;
- `snapshot`: the host state the tests compare before and after;
- `runtime`: containerd with its own root, state and socket, and image import;
- `node`: `NodeCluster`, which starts and stops all of it.
"""
