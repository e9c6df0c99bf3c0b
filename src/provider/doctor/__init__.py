"""`provider-kserve doctor`: what a cluster lacks for the provider (CRDs, permissions, kinds)."""
