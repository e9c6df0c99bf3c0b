"""`PredictorTopology`: the `predictor` topology as a `provider.topologies.protocol.TopologyHandler`."""

from __future__ import annotations

from collections.abc import Sequence

from actors import KubeObject, Phase, Resource, StatusReport
from provider.model.instance import Instance
from provider.model.kinds import INFERENCE_SERVICE
from provider.model.settings import ProviderSettings
from provider.rules.pod_security import PodPolicy
from provider.topologies.predictor.status import predictor_status
from provider.topologies.predictor.translate import inference_service
from provider.topologies.predictor.validation import COMPONENT, PredictorInputs, validate_predictor
from provider.topologies.protocol import Catalogs, Live, Observed, Release, StatusInputs, nothing_live


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
        return [inference_service(instance, inputs)]

    def status(
        self, instance: Instance, inputs: PredictorInputs, observed: Observed, context: StatusInputs
    ) -> StatusReport:
        isvc = observed.get((INFERENCE_SERVICE, instance.metadata.name))
        return predictor_status(isvc, was_ready=instance.status.get("phase") == Phase.READY.value)

    def releases(self, instance_name: str, live: Live) -> Sequence[Release]:
        return ()  # KServe holds nothing of a predictor past its deletion
