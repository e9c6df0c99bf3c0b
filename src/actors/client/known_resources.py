"""The OpenEverest and core resources the runtime itself reads and writes."""

from __future__ import annotations

from actors.client.resource import Resource

INSTANCES = Resource("core.openeverest.io", "v1alpha1", "instances", "Instance")
PROVIDERS = Resource("core.openeverest.io", "v1alpha1", "providers", "Provider", namespaced=False)
SECRETS = Resource("", "v1", "secrets", "Secret")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", namespaced=False)
EVENTS = Resource("events.k8s.io", "v1", "events", "Event")
