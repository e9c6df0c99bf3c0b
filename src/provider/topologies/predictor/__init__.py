"""The `predictor` topology: one KServe InferenceService (v1beta1, Standard mode) per Instance.

Modules: `params` (the strict `PredictorParameters` model), `validation` (ordered rules, exact
messages; component resources checked and limits mirrored into requests), `translate` (pure
Instance → InferenceService), `status` (InferenceService → Instance status), `handler`
(`PredictorTopology`, the `TopologyHandler`).

Switching topology on a live Instance (predictor → llm, and back) is supported: desired() of each
topology holds only its own kinds, and the runtime prunes every owned object of the provider's
kinds (the union over all topologies, `KServeProvider.owned_resources`) that is no longer
desired. So after a switch to llm the InferenceService is deleted on the next sync, and after a
switch back the LLMInferenceService and its helpers are. The Go provider left the old objects
running until the Instance was deleted (kserve-behavior §5, §10.10).
"""

from provider.topologies.predictor.handler import PredictorTopology
from provider.topologies.predictor.params import PredictorParameters

__all__ = ["PredictorParameters", "PredictorTopology"]
