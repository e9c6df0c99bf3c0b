"""The pieces of the local control plane (dev/controlplane.py): binaries, PKI, CRDs, processes."""
