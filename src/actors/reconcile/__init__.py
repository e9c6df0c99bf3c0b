"""The Instance reconciler (controller-runtime's `Reconciler`, kube-runtime's `reconcile`): the state
machine Validate, Sync, Status and Cleanup, the finalizer, and version bundles."""
