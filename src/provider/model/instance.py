"""The Instance custom resource as this provider reads it (core.openeverest.io/v1alpha1).

Only the fields the provider uses are modelled; everything else is kept (extra="allow") so that a
newer core's fields pass through untouched. Component and topology `parameters` stay raw dicts here:
each topology validates them with its own strict model (see `provider.topologies.llm.params`,
`provider.topologies.predictor.params`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from actors import INSTANCES


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class ObjectMeta(_Open):
    name: str
    namespace: str = "default"
    uid: str = ""
    generation: int = 0
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class LoadBalancerService(_Open):
    source_ranges: list[str] = Field(default_factory=list, alias="sourceRanges")


class ComponentService(_Open):
    service_type: str | None = Field(default=None, alias="serviceType")
    annotations: dict[str, str] = Field(default_factory=dict)
    load_balancer_service: LoadBalancerService | None = Field(default=None, alias="loadBalancerService")


class ComponentSpec(_Open):
    name: str | None = None
    type: str | None = None
    version: str | None = None
    image: str | None = None
    replicas: int | None = None
    # core/v1 ResourceRequirements, kept raw: quantities are validated by the API server.
    resources: dict[str, Any] | None = None
    service: ComponentService | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)


class Topology(_Open):
    type: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)


class ProviderRef(_Open):
    name: str


class InstanceSpec(_Open):
    provider_ref: ProviderRef = Field(alias="providerRef")
    version: str | None = None
    topology: Topology | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    components: dict[str, ComponentSpec] = Field(default_factory=dict)


class Instance(_Open):
    api_version: str = Field(default=INSTANCES.api_version, alias="apiVersion")
    kind: str = "Instance"
    metadata: ObjectMeta
    spec: InstanceSpec
    status: dict[str, Any] = Field(default_factory=dict)
