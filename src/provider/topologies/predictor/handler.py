"""`PredictorTopology`: the `predictor` topology as a `provider.topologies.protocol.TopologyHandler`."""

from __future__ import annotations

from collections.abc import Sequence

from actors import KubeObject, Release, Resource, StatusReport
from provider.model.catalog import Catalogs
from provider.model.instance import Instance
from provider.model.kinds import INFERENCE_SERVICE
from provider.model.settings import ProviderSettings
from provider.rules.pod_security import PodPolicy
from provider.topologies.predictor.status import predictor_status
from provider.topologies.predictor.translate import inference_service
from provider.topologies.predictor.validation import COMPONENT, PredictorInputs, validate_predictor
from provider.topologies.protocol import Live, Observed, StatusInputs, nothing_live
from provider.topologies.suspension import kept_count


class PredictorTopology:
    """One InferenceService per Instance; no catalogs, no optional kinds, no outside inputs.

    Takes the chart settings like every registered topology (`provider.topologies.registry`), though
    no setting changes what a predictor Instance becomes.
    """

    name: str = "predictor"
    # The components whose pods status.components counts.
    components: tuple[str, ...] = (COMPONENT,)

    def __init__(self, settings: ProviderSettings | None = None) -> None:
        self.settings = settings

    def resources(self) -> Sequence[Resource]:
        return (INFERENCE_SERVICE,)

    def derived_names(self, instance_name: str) -> frozenset[tuple[Resource, str]]:
        return frozenset({(INFERENCE_SERVICE, instance_name)})

    def validate(self, instance: Instance, catalogs: Catalogs, policy: PodPolicy | None = None) -> PredictorInputs:
        # A predictor passes no pod settings through, so the Pod Security policy has nothing to check.
        return validate_predictor(instance)

    def desired(
        self, instance: Instance, inputs: PredictorInputs, available: frozenset[Resource], live: Live = nothing_live
    ) -> list[KubeObject]:
        kept = kept_count(live(INFERENCE_SERVICE, instance.metadata.name), "spec", "predictor", "minReplicas")
        return [inference_service(instance, inputs, kept_min_replicas=kept if inputs.suspended else None)]

    def status(
        self, instance: Instance, inputs: PredictorInputs, observed: Observed, context: StatusInputs
    ) -> StatusReport:
        key = (INFERENCE_SERVICE, instance.metadata.name)
        previous = instance.status.get("phase")
        return predictor_status(
            observed.get(key),
            previous=previous if isinstance(previous, str) else None,
            changed=key in context.written,
            suspended=inputs.suspended,
        )

    def releases(self, instance_name: str, live: Live) -> Sequence[Release]:
        return ()  # KServe holds nothing of a predictor past its deletion
