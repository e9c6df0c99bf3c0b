"""`provider-kserve inspect`: what the provider owns in a cluster, per Instance."""
