"""Generic actor-style reconcile runtime for OpenEverest providers. Knows nothing of KServe."""
