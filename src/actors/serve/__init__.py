"""The provider's HTTP servers (controller-runtime's webhook and metrics servers): probes, /metrics,
/validate and /schema, with kube-rbac-proxy's authorization in-process and TLS."""
