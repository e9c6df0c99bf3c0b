"""`LlmTopology`: the `llm` topology as the pure TopologyHandler the KServe provider dispatches to."""

from __future__ import annotations

from collections.abc import Sequence

from actors import KubeObject, Phase, Resource, StatusReport, ValidationFailed
from provider.model import kinds
from provider.model.instance import Instance
from provider.model.settings import ProviderSettings
from provider.rules.pod_security import PodPolicy
from provider.topologies.llm.exposure import external_service
from provider.topologies.llm.gateway import gateway_objects
from provider.topologies.llm.monitoring import pod_monitor
from provider.topologies.llm.serviceaccount import model_puller
from provider.topologies.llm.status import llm_status
from provider.topologies.llm.validation import read_llm, validate_llm
from provider.topologies.llm.workload import llm_config, llm_inference_service
from provider.topologies.protocol import Catalogs, Observed, StatusInputs


class LlmTopology:
    """Instance (topology `llm`) → ServiceAccount, LLMInferenceServiceConfig, LLMInferenceService,
    PodMonitor, Service and the AI Gateway objects, as each is wanted."""

    name: str = "llm"

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings

    def resources(self) -> Sequence[Resource]:
        return kinds.OWNED

    def validate(self, instance: Instance, catalogs: Catalogs, policy: PodPolicy | None = None) -> None:
        validate_llm(instance, catalogs, self.settings, policy)

    def desired(
        self,
        instance: Instance,
        catalogs: Catalogs,
        available: frozenset[Resource],
        policy: PodPolicy | None = None,
    ) -> list[KubeObject]:
        inputs = validate_llm(instance, catalogs, self.settings, policy)
        wanted: list[KubeObject | None] = [
            model_puller(inputs, self.settings),
            llm_config(inputs),
            llm_inference_service(inputs, self.settings),
            pod_monitor(inputs, self.settings),
            external_service(inputs),
            *gateway_objects(inputs, self.settings),
        ]
        by_kind = {r.kind: r for r in kinds.OWNED}
        return [
            obj
            for obj in wanted
            if obj is not None and (by_kind[obj["kind"]] not in kinds.OPTIONAL or by_kind[obj["kind"]] in available)
        ]

    def status(self, instance: Instance, observed: Observed, inputs: StatusInputs) -> StatusReport:
        try:
            llm = read_llm(instance, self.settings)
        except ValidationFailed as exc:
            # Validation runs first, so this means the chart settings changed under the Instance.
            return StatusReport(Phase.FAILED, exc.message)
        was_ready = instance.status.get("phase") == Phase.READY.value
        return llm_status(llm, self.settings, observed, inputs, was_ready=was_ready)
