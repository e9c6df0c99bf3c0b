"""The topologies (`spec.topology.type`): the protocol each implements, the registry, and what they
share (KServe's conditions, connection URLs); `llm/` and `predictor/` are the two."""
