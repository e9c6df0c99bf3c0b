"""`LlmTopology`: the `llm` topology as the pure TopologyHandler the KServe provider dispatches to."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from actors import KubeObject, Release, Resource, StatusReport
from provider.model import kinds, names
from provider.model.catalog import Catalogs
from provider.model.instance import Instance
from provider.model.settings import ProviderSettings
from provider.rules.pod_security import PodPolicy
from provider.topologies.llm.config import RELEASE_ANNOTATION, config_still_in_use, held_config
from provider.topologies.llm.exposure import external_service
from provider.topologies.llm.gateway import gateway_objects
from provider.topologies.llm.inputs import COMPONENT, LlmInputs
from provider.topologies.llm.monitoring import pod_monitor
from provider.topologies.llm.serviceaccount import model_puller
from provider.topologies.llm.status import llm_status
from provider.topologies.llm.validation import validate_llm
from provider.topologies.llm.workload import llm_config, llm_inference_service
from provider.topologies.protocol import Live, Observed, StatusInputs, nothing_live
from provider.topologies.suspension import kept_count


def _kept_replicas(inputs: LlmInputs, live: Live) -> int | None:
    """While suspended, the replicas the LLMInferenceService stands with: only the stop annotation changes."""
    if not inputs.suspended:
        return None
    return kept_count(live(kinds.LLM_INFERENCE_SERVICE, inputs.name), "spec", "replicas")


class LlmTopology:
    """Instance (topology `llm`) → ServiceAccount, LLMInferenceServiceConfig, LLMInferenceService,
    PodMonitor, Service and the AI Gateway objects, as each is wanted."""

    name: str = "llm"
    # The components whose pods status.components counts.
    components: tuple[str, ...] = (COMPONENT,)

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings

    def resources(self) -> Sequence[Resource]:
        return kinds.OWNED

    def derived_names(self, instance_name: str) -> frozenset[tuple[Resource, str]]:
        return frozenset(
            {
                (kinds.SERVICE_ACCOUNT, names.model_puller_name(instance_name)),
                (kinds.LLM_INFERENCE_SERVICE_CONFIG, names.config_name(instance_name)),
                (kinds.LLM_INFERENCE_SERVICE, instance_name),
                (kinds.POD_MONITOR, names.metrics_name(instance_name)),
                (kinds.SERVICE, names.external_service_name(instance_name)),
                (kinds.AI_GATEWAY_ROUTE, names.ai_gateway_route_name(instance_name)),
                (kinds.BACKEND_TRAFFIC_POLICY, names.token_limit_name(instance_name)),
            }
        )

    def validate(self, instance: Instance, catalogs: Catalogs, policy: PodPolicy | None = None) -> LlmInputs:
        return validate_llm(instance, catalogs, self.settings, policy)

    def desired(
        self, instance: Instance, inputs: LlmInputs, available: frozenset[Resource], live: Live = nothing_live
    ) -> list[KubeObject]:
        wanted: list[KubeObject | None] = [
            model_puller(inputs, self.settings),
            llm_config(inputs),
            llm_inference_service(inputs, self.settings, _kept_replicas(inputs, live)),
            pod_monitor(inputs, self.settings),
            external_service(inputs),
            *gateway_objects(inputs, self.settings),
        ]
        by_kind = {r.kind: r for r in kinds.OWNED}
        desired = [
            obj
            for obj in wanted
            if obj is not None and (by_kind[obj["kind"]] not in kinds.OPTIONAL or by_kind[obj["kind"]] in available)
        ]
        if (in_use := config_still_in_use(desired, live)) is not None:
            desired.insert(0, in_use)
        return desired

    def status(self, instance: Instance, inputs: LlmInputs, observed: Observed, context: StatusInputs) -> StatusReport:
        previous = instance.status.get("phase")
        known = previous if isinstance(previous, str) else None
        return llm_status(inputs, self.settings, observed, context, previous=known)

    def releases(self, instance_name: str, live: Live) -> Sequence[Release]:
        """The Instance's config, when KServe's finalizer holds it after every service let it go:
        KServe 0.20 can miss that moment, so a touch makes its config controller look again."""
        config = held_config(instance_name, live)
        if config is None:
            return ()
        meta = config["metadata"]
        touch = {"metadata": {"annotations": {RELEASE_ANNOTATION: datetime.now(UTC).isoformat()}}}
        return (Release(kinds.LLM_INFERENCE_SERVICE_CONFIG, meta["namespace"], meta["name"], touch),)
