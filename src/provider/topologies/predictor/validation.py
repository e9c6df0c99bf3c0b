"""Validation of a `predictor` Instance: ordered rules, exact messages, every failing rule reported.

Order and texts follow the Go provider (kserve-behavior §1.5) where it has a rule:

1. `the "predictor" component is required for the "predictor" topology`
2. `predictor.parameters.modelFormat is required`
3. `predictor.parameters.storageURI is required`
4. `predictor.parameters.minReplicas must not be negative` (and the same for maxReplicas)

then the rules the Go provider lacked (its decode errors were swallowed, §10.14/§10.18):

5. types, unknown keys and name formats, from the strict `PredictorParameters` model, e.g.
   `predictor.parameters.minReplicas: Input should be a valid integer`
6. `predictor replicas must not be negative`
7. `predictor.parameters.maxReplicas (2) must be greater than or equal to minReplicas (3)`; then
   how to scale (scaleMetric, scaleTarget) needs a range above minReplicas, and memory a target
8. the component `resources`, e.g. `predictor.resources.limits.cpu: 'abc' is not a valid quantity …`

Only rule 1 stops everything: the message lists every other failing rule, in this order
(provider.rules.problems); a rule that needs what an earlier one could not read (7 needs the
parameters) is skipped when that one failed.

Parameter keys are matched case-insensitively (`storageUri` fills `storageURI`), as Go's JSON
decoder did: KServe itself spells the field `storageUri`, and Instances written for the Go
provider must keep working.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from actors import ValidationFailed
from provider.model.instance import ComponentSpec, Instance
from provider.rules.error_messages import error_messages
from provider.rules.fields import URI_MAX, check_int32, check_length, check_text
from provider.rules.problems import Problems

# The component-resources rules are the llm topology's (same messages, same limit → request
# mirroring): one implementation for both components.
from provider.rules.resource_requirements import container_resources
from provider.topologies.predictor.params import PredictorParameters

COMPONENT = "predictor"
PARAMS_PREFIX = "predictor.parameters"

_WIRE_NAMES = {
    (field.alias or name).lower(): field.alias or name for name, field in PredictorParameters.model_fields.items()
}


@dataclass(frozen=True)
class PredictorInputs:
    """Everything translation needs, already validated."""

    params: PredictorParameters
    # Component `replicas`; a fallback for minReplicas. 0 suspends the Instance.
    replicas: int | None
    # Model container resources, limits mirrored into requests; {} when unset.
    resources: dict[str, Any]

    @property
    def suspended(self) -> bool:
        """replicas 0: the user's gesture to stop the model (provider.topologies.suspension)."""
        return self.replicas == 0

    @property
    def min_replicas(self) -> int | None:
        return self.params.min_replicas if self.params.min_replicas is not None else self.replicas

    @property
    def max_replicas(self) -> int | None:
        # 0 means "unset", as in the Go provider (an omitempty int32).
        return self.params.max_replicas or None


def predictor_component(instance: Instance) -> ComponentSpec:
    component = instance.spec.components.get(COMPONENT)
    if component is None:
        raise ValidationFailed(f'the "{COMPONENT}" component is required for the "predictor" topology')
    return component


def canonical_keys(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Wire names for case variants (`storageUri` → `storageURI`); `null` values dropped (unset)."""
    out: dict[str, Any] = {}
    written_as: dict[str, str] = {}
    for key, value in raw.items():
        if value is None:
            continue
        wire = _WIRE_NAMES.get(key.lower(), key)
        if wire in written_as:
            raise ValidationFailed(f"{PARAMS_PREFIX}.{written_as[wire]} and {key} set the same parameter; keep one")
        written_as[wire] = key
        out[wire] = value
    return out


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _negative(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value < 0


def parse_parameters(raw: Mapping[str, Any]) -> PredictorParameters:
    """The parameters, or ValidationFailed naming every wrong parameter."""
    params = canonical_keys(raw)
    problems = Problems()
    # Fields whose problem is already said in the Go provider's words: the model's own error for
    # them (a missing field, a negative count) would say it twice.
    reported: set[str] = set()
    for required in ("modelFormat", "storageURI"):
        if _blank(params.get(required)):
            problems.add(f"{PARAMS_PREFIX}.{required} is required")
            reported.add(required)
    if isinstance(params.get("storageURI"), str):
        with problems.collect():
            check_length(params["storageURI"], f"{PARAMS_PREFIX}.storageURI", URI_MAX)
    for count in ("minReplicas", "maxReplicas"):
        if _negative(params.get(count)):
            problems.add(f"{PARAMS_PREFIX}.{count} must not be negative")
            reported.add(count)
    parsed: PredictorParameters | None = None
    try:
        parsed = PredictorParameters.model_validate(params)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        kept = [err for err in errors if not (err["loc"] and err["loc"][0] in reported)]
        problems.extend(error_messages(PARAMS_PREFIX, kept))
    if parsed is not None:
        with problems.collect():
            check_text(parsed.storage_uri, f"{PARAMS_PREFIX}.storageURI")
    problems.raise_any()
    assert parsed is not None  # the model read them, or a problem was raised above
    return parsed


def scaling_problems(inputs: PredictorInputs) -> list[str]:
    """Rule 7b: how to scale needs a range to scale in (KServe keeps at least one replica), and a
    memory target, for which KServe has no default (its autoscaler would be given no metric)."""
    params, found = inputs.params, list[str]()
    set_here = (("scaleMetric", params.scale_metric), ("scaleTarget", params.scale_target))
    said = [name for name, value in set_here if value is not None]
    floor = max(inputs.min_replicas or 1, 1)
    if said and (inputs.max_replicas or 0) <= floor:
        found.append(
            f"{PARAMS_PREFIX}.{said[0]} says how KServe's autoscaler scales, but maxReplicas "
            f"({inputs.max_replicas or 'unset'}) is not above minReplicas ({floor}): set maxReplicas above minReplicas"
        )
    if params.scale_metric == "memory" and params.scale_target is None:
        found.append(f"{PARAMS_PREFIX}.scaleTarget is required with scaleMetric memory: KServe has no default for it")
    return found


def validate_predictor(instance: Instance) -> PredictorInputs:
    """All rules in order; the inputs for translation, or ValidationFailed naming every failure."""
    component = predictor_component(instance)
    problems = Problems()
    params: PredictorParameters | None = None
    with problems.collect():
        params = parse_parameters(component.parameters)
    replicas = component.replicas
    with problems.collect():
        if replicas is not None and replicas < 0:
            raise ValidationFailed(f"{COMPONENT} replicas must not be negative")
        check_int32(replicas, f"{COMPONENT}.replicas")
    if params is not None:
        inputs = PredictorInputs(params=params, replicas=replicas, resources={})
        low, high = inputs.min_replicas, inputs.max_replicas
        if low is not None and high is not None and high < low:
            bound = "minReplicas" if params.min_replicas is not None else f"{COMPONENT} replicas"
            problems.add(f"{PARAMS_PREFIX}.maxReplicas ({high}) must be greater than or equal to {bound} ({low})")
        problems.extend(scaling_problems(inputs))
    resources: dict[str, Any] = {}
    with problems.collect():
        # Resources last, as the Go provider had no rule for them.
        resources = container_resources(component.resources, prefix=f"{COMPONENT}.resources")
    problems.raise_any()
    assert params is not None  # read, or a problem was raised above
    return PredictorInputs(params=params, replicas=replicas, resources=resources)
