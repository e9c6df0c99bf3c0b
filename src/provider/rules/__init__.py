"""Rules the topologies share: the limits of Kubernetes fields, quantities, Pod Security, bounded YAML,
resource requirements, and how a message names a field and quotes a value."""
