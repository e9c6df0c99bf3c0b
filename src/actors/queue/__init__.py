"""The work queue (controller-runtime's workqueue, kube-runtime's scheduler and runner): per-key
actors that never run one key twice at once, coalescing, backoff and the global rate limit, and the
clock everything that reads time goes through."""
