"""`llmEngine.parameters.kvCacheOffloading`: KServe 0.20's KV-cache offloading, the LLMInferenceService's
`spec.kvCacheOffloading` (vLLM's OffloadingConnector, which KServe's presets pass as
`--kv-transfer-config` to vLLM 0.22 and later).

The tiers KServe takes, and how the parameter names them:

- `cpu`: CPU RAM for the first tier (vLLM's `cpu_bytes_to_use`), a quantity such as `20Gi`.
  Required once offloading is on. The model server's own memory: it must stay below the
  llmEngine memory limit, or vLLM is killed for memory when the cache fills.
- `evictionPolicy`: `lru` (KServe's default) or `arc`.
- `fileSystem`: one disk tier below the CPU RAM, on a volume KServe mounts into the model server:
  - `volume: emptyDir` with `size`: node-local scratch disk per pod (KServe also requests that much
    ephemeral storage for the pod, so it must fit under an ephemeral-storage limit, if one is set);
  - `volume: claim` with `claimName` (and `path`, a subdirectory in it): an existing
    PersistentVolumeClaim of the Instance's namespace, shared by every pod that mounts it;
  - `volume: ephemeralClaim` with `size` (and `storageClassName`): a ReadWriteOnce claim per pod,
    made and deleted with the pod.
  KServe takes a list of such tiers, cascading in order; one disk tier is what the form offers and
  what the parameter takes.

With prefill/decode disaggregation the prefill pods run the same engine with the same limits, so
they get the same offloading (`spec.prefill.kvCacheOffloading`).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Annotated, Any, Final, Literal

from pydantic import Field, WithJsonSchema, field_validator, model_validator

from actors import ValidationFailed
from provider.rules.fields import unprintable
from provider.rules.quantity import QUANTITY_PATTERN, QuantityError, canonical_quantity, quantity_value
from provider.rules.quote import quote
from provider.topologies.llm.param_base import ENGINE_PREFIX, OBJECT_NAME_PATTERN, StrictParams, rule_error

PREFIX: Final = f"{ENGINE_PREFIX}.kvCacheOffloading"
# KServe reads the CPU tier as an int64 number of bytes (resource.Quantity.Value()).
INT64_MAX: Final = 2**63 - 1
PATH_MAX: Final = 4096
NAME_MAX: Final = 253
Volume = Literal["emptyDir", "claim", "ephemeralClaim"]
# A Kubernetes quantity as KServe's CRD takes it (int-or-string).
Quantity = Annotated[
    str | int,
    WithJsonSchema(
        {
            "anyOf": [{"type": "string", "pattern": QUANTITY_PATTERN}, {"type": "integer"}],
            "x-kubernetes-int-or-string": True,
        }
    ),
]


def _positive_quantity(value: str | int | None, where: str) -> str | None:
    """`value` in Kubernetes' canonical form; above zero and within what KServe reads as an int64."""
    if value is None:
        return None
    try:
        canonical = canonical_quantity(str(value))
        amount = quantity_value(canonical)
    except QuantityError as exc:
        raise rule_error(f"{where} {quote(str(value))} is not a quantity ({exc}), e.g. 20Gi") from None
    if amount <= 0:
        raise rule_error(f"{where} must be more than 0, e.g. 20Gi")
    if amount > INT64_MAX:
        raise rule_error(f"{where} is larger than KServe takes ({INT64_MAX} bytes)")
    return canonical


def _blank_is_unset(value: Any) -> Any:
    # The UI sends empty strings for untouched fields.
    if isinstance(value, str):
        return value.strip() or None
    return value


def _quantity_input(value: Any, where: str) -> Any:
    """A quantity is written as a string or a whole number; say so for anything else (the union's
    own errors would name its branches)."""
    value = _blank_is_unset(value)
    if value is not None and (isinstance(value, bool) or not isinstance(value, str | int)):
        raise rule_error(f"{where} must be a quantity such as 20Gi, not {quote(str(value))}")
    return value


class FileSystemTier(StrictParams):
    """The disk tier below the CPU RAM, on one volume."""

    volume: Volume | None = Field(
        default=None,
        description="emptyDir (node-local disk per pod), claim (an existing PersistentVolumeClaim) or "
        "ephemeralClaim (a claim per pod, deleted with it).",
    )
    size: Quantity | None = Field(default=None, description="The tier's size (emptyDir, ephemeralClaim), e.g. 100Gi.")
    claim_name: str | None = Field(
        default=None,
        alias="claimName",
        max_length=NAME_MAX,
        pattern=OBJECT_NAME_PATTERN,
        description="The PersistentVolumeClaim in the Instance's namespace (claim).",
    )
    path: str | None = Field(
        default=None, max_length=PATH_MAX, description="A subdirectory of the claim to use (claim)."
    )
    storage_class_name: str | None = Field(
        default=None,
        alias="storageClassName",
        max_length=NAME_MAX,
        pattern=OBJECT_NAME_PATTERN,
        description="The StorageClass of the per-pod claims (ephemeralClaim); the cluster's default when unset.",
    )

    @field_validator("volume", "claim_name", "path", "storage_class_name", mode="before")
    @classmethod
    def _blanks(cls, value: Any) -> Any:
        return _blank_is_unset(value)

    @field_validator("size", mode="before")
    @classmethod
    def _size_input(cls, value: Any) -> Any:
        return _quantity_input(value, f"{PREFIX}.fileSystem.size")

    @field_validator("size")
    @classmethod
    def _size(cls, value: str | int | None) -> str | None:
        return _positive_quantity(value, f"{PREFIX}.fileSystem.size")

    @field_validator("path")
    @classmethod
    def _path(cls, value: str | None) -> str | None:
        # It becomes the volume mount's subPath: relative, inside the claim.
        if value is None:
            return None
        where = f"{PREFIX}.fileSystem.path"
        if (bad := unprintable(value)) is not None:
            raise rule_error(f"{where} contains the unprintable character {bad}")
        if value.startswith("/") or ".." in value.split("/"):
            raise rule_error(f"{where} {quote(value)} must be a relative path inside the claim, without '..'")
        return value

    @model_validator(mode="after")
    def _one_volume(self) -> FileSystemTier:
        where = f"{PREFIX}.fileSystem"
        given = {
            "size": self.size,
            "claimName": self.claim_name,
            "path": self.path,
            "storageClassName": self.storage_class_name,
        }
        allowed = {
            None: (),
            "emptyDir": ("size",),
            "claim": ("claimName", "path"),
            "ephemeralClaim": ("size", "storageClassName"),
        }[self.volume]
        needed = {"emptyDir": "size", "claim": "claimName", "ephemeralClaim": "size"}.get(self.volume or "")
        if self.volume is None and any(v is not None for v in given.values()):
            raise rule_error(f"{where}.volume is required (emptyDir, claim or ephemeralClaim)")
        if needed is not None and given[needed] is None:
            raise rule_error(f"{where}.{needed} is required with volume {self.volume}")
        extra = [key for key, value in given.items() if value is not None and key not in allowed]
        if extra:
            raise rule_error(f"{where}.{extra[0]} does not apply to volume {self.volume}")
        return self

    def tier(self) -> dict[str, Any] | None:
        """KServe's SecondaryTierSpec, or None when no volume is chosen."""
        if self.volume == "emptyDir":
            return {"fileSystem": {"emptyDir": {"size": self.size}}}
        if self.volume == "claim":
            ref: dict[str, Any] = {"name": self.claim_name}
            if self.path:
                ref["path"] = self.path
            return {"fileSystem": {"pvc": {"ref": ref}}}
        if self.volume == "ephemeralClaim":
            requests = {"storage": self.size}
            claim: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": requests}}
            if self.storage_class_name:
                claim["storageClassName"] = self.storage_class_name
            return {"fileSystem": {"pvc": {"spec": claim}}}
        return None


class KvCacheOffloading(StrictParams):
    """KV-cache offloading: CPU RAM, then optionally a disk tier."""

    cpu: Quantity | None = Field(
        default=None,
        description="CPU RAM for offloaded KV-cache blocks, e.g. 20Gi; below the llmEngine memory limit. "
        "Offloading is off while unset.",
    )
    eviction_policy: Literal["lru", "arc"] | None = Field(
        default=None, alias="evictionPolicy", description="How the CPU tier evicts blocks (KServe's default: lru)."
    )
    file_system: FileSystemTier | None = Field(
        default=None, alias="fileSystem", description="A disk tier below the CPU RAM."
    )

    @field_validator("eviction_policy", mode="before")
    @classmethod
    def _blanks(cls, value: Any) -> Any:
        return _blank_is_unset(value)

    @field_validator("cpu", mode="before")
    @classmethod
    def _cpu_input(cls, value: Any) -> Any:
        return _quantity_input(value, f"{PREFIX}.cpu")

    @field_validator("cpu")
    @classmethod
    def _cpu(cls, value: str | int | None) -> str | None:
        return _positive_quantity(value, f"{PREFIX}.cpu")

    @model_validator(mode="after")
    def _cpu_first(self) -> KvCacheOffloading:
        disk = self.file_system is not None and self.file_system.volume is not None
        if self.cpu is None and (disk or self.eviction_policy is not None):
            raise rule_error(f"{PREFIX}.cpu is required: the CPU RAM tier comes before any other")
        return self

    def spec(self) -> dict[str, Any] | None:
        """KServe's KVCacheOffloadingSpec, or None when offloading is off."""
        if self.cpu is None:
            return None
        out: dict[str, Any] = {"cpu": self.cpu}
        if self.eviction_policy is not None:
            out["evictionPolicy"] = self.eviction_policy
        tier = self.file_system.tier() if self.file_system is not None else None
        if tier is not None:
            out["secondary"] = [tier]
        return out


def _limit(resources: Mapping[str, Any], section: str, name: str) -> Fraction | None:
    raw = (resources.get(section) or {}).get(name)
    return quantity_value(str(raw)) if raw is not None else None


def check_against_resources(offloading: KvCacheOffloading | None, resources: Mapping[str, Any]) -> None:
    """The tiers within the model server's limits (`resources`: the llmEngine container's, checked
    and with limits mirrored into requests)."""
    spec = offloading.spec() if offloading is not None else None
    if offloading is None or spec is None:
        return
    memory = _limit(resources, "limits", "memory")
    if memory is not None and quantity_value(str(offloading.cpu)) >= memory:
        raise ValidationFailed(
            f"{PREFIX}.cpu ({offloading.cpu}) must be less than llmEngine.resources.limits.memory "
            f"({resources['limits']['memory']}): the CPU tier lives in the model server's memory"
        )
    tier = offloading.file_system
    if tier is None or tier.volume != "emptyDir":
        return
    limit = _limit(resources, "limits", "ephemeral-storage")
    if limit is None:
        return
    requested = (_limit(resources, "requests", "ephemeral-storage") or Fraction(0)) + quantity_value(str(tier.size))
    if requested > limit:
        raise ValidationFailed(
            f"{PREFIX}.fileSystem.size ({tier.size}) is added to the model server's ephemeral-storage request, "
            "which then exceeds llmEngine.resources.limits.ephemeral-storage "
            f"({resources['limits']['ephemeral-storage']}); raise or remove that limit, or use volume claim "
            "or ephemeralClaim"
        )
