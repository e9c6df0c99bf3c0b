"""The `llm` topology: an LLMInferenceService (serving.kserve.io/v1alpha2) and its helpers.

Pure functions from a validated Instance to desired objects and from observed objects to status;
`LlmTopology` (provider.topologies.llm.handler) puts them behind the TopologyHandler protocol.
"""
