"""Parameters of the `llm` topology as strict pydantic models.

`LlmEngineParameters` is `spec.components.llmEngine.parameters` (component type `vllm`);
`LlmTopologyParameters` (provider.topologies.llm.topology_params) is `spec.topology.parameters`; what both
share is in provider.topologies.llm.param_base. Every field's alias is its wire name, so
`model_json_schema(by_alias=True)` is the schema published in the Provider CR.

Strict where the Go provider was tolerant (kserve-behavior §10.14): a wrong type, an unknown key or
an unknown enum value is an error naming the field, e.g.
`llmEngine.parameters.tensorParallelSize: Input should be a valid integer`. Flags accept a boolean
or the strings true/false/enabled/disabled/yes/no/1/0, because the UI renders flags as selects with
string values. Rules the Go provider had keep its exact messages; they are raised as `rule_error`s,
whose message `message_of` shows verbatim instead of prefixing it with the field path.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from provider.rules.fields import unprintable
from provider.rules.quote import quote
from provider.topologies.llm.config import ConfigError, parse_config
from provider.topologies.llm.kv_offloading import KvCacheOffloading
from provider.topologies.llm.param_base import (
    ENGINE_PREFIX,
    INT32_MAX,
    INT32_MIN,
    MIN_KV_CACHE_SPACE_GI,
    OBJECT_NAME_PATTERN,
    Flag,
    StrictParams,
    publish_schema,
    rule_error,
)
from provider.topologies.llm.uris import SCHEMES, uri_problem

# -- llmEngine parameters ------------------------------------------------------------------------


def _adapter_schema(schema: dict[str, Any]) -> None:
    # Both are required; the model itself lets them be missing so that validation can report the
    # Go provider's messages (`llmEngine.parameters.lora.adapters[0].name is required`).
    publish_schema(schema)
    schema["required"] = ["name", "uri"]
    for prop in schema["properties"].values():
        prop.pop("default", None)
        prop["minLength"] = 1


class LoraAdapterSpec(StrictParams):
    """One explicit LoRA adapter (checked in provider.topologies.llm.validation, with the Go messages)."""

    model_config = ConfigDict(json_schema_extra=_adapter_schema)

    name: str = Field(default="", description="Adapter name clients send as `model`.")
    uri: str = Field(default="", description="Where the adapter is stored (hf://, s3://, gs://, pvc://, oci://).")


def _at_least_one(field: str) -> Any:
    def check(value: int | None) -> int | None:
        if value is not None and value < 1:
            raise rule_error(f"{ENGINE_PREFIX}.lora.{field} must be at least 1")
        return value

    return check


class LoraSpec(StrictParams):
    adapters: list[LoraAdapterSpec] = Field(
        default_factory=list,
        description="Explicit adapters; used when loraDeployment is unset (the catalog slots otherwise).",
    )
    max_rank: int | None = Field(
        default=None,
        alias="maxRank",
        le=INT32_MAX,
        description="Largest adapter rank (vLLM --max-lora-rank).",
        json_schema_extra={"minimum": 1},
    )
    max_adapters: int | None = Field(
        default=None,
        alias="maxAdapters",
        le=INT32_MAX,
        description="Adapters batched at once on the GPU (vLLM --max-loras).",
        json_schema_extra={"minimum": 1},
    )
    max_cpu_adapters: int | None = Field(
        default=None,
        alias="maxCpuAdapters",
        le=INT32_MAX,
        description="Adapters cached in CPU memory (vLLM --max-cpu-loras).",
        json_schema_extra={"minimum": 1},
    )

    _max_rank = field_validator("max_rank")(_at_least_one("maxRank"))
    _max_adapters = field_validator("max_adapters")(_at_least_one("maxAdapters"))
    _max_cpu_adapters = field_validator("max_cpu_adapters")(_at_least_one("maxCpuAdapters"))


class LlmEngineParameters(StrictParams):
    """Parameters of the `llmEngine` component (component type `vllm`)."""

    model_config = ConfigDict(title="LlmEngineParameters")

    model_uri: str = Field(
        alias="modelURI",
        min_length=1,
        description="Where the model is stored: " + ", ".join(f"{s}://" for s in SCHEMES) + ".",
        examples=["hf://meta-llama/Llama-3.1-8B-Instruct"],
    )
    model_name: str | None = Field(
        default=None,
        alias="modelName",
        max_length=253,
        description="Served model name (the `model` clients send); defaults to the Instance name.",
        examples=["llama-3.1-8b-instruct"],
    )
    tensor_parallel_size: int | None = Field(
        default=None, alias="tensorParallelSize", ge=1, le=INT32_MAX, description="GPUs per model replica."
    )
    pipeline_parallel_size: int | None = Field(
        default=None,
        alias="pipelineParallelSize",
        ge=1,
        le=INT32_MAX,
        description="Pipeline-parallel stages. Mutually exclusive with dataParallelSize above 1.",
    )
    data_parallel_size: int | None = Field(
        default=None,
        alias="dataParallelSize",
        ge=1,
        le=INT32_MAX,
        description="Data-parallel ranks on the node (1 is a no-op). Mutually exclusive with "
        "pipelineParallelSize above 1.",
    )
    expert_parallel: Flag | None = Field(
        default=None, alias="expertParallel", description="Expert parallelism for mixture-of-experts models."
    )
    gpu_count: int | None = Field(
        default=None,
        alias="gpuCount",
        ge=1,
        le=INT32_MAX,
        description="nvidia.com/gpu per model server pod, limit and request (gpu profile only; the cpu profile "
        "ignores it). The UI's way to ask for GPUs; agrees with llmEngine.resources when both set it.",
    )
    compute_profile: Literal["gpu", "cpu"] = Field(
        default="gpu",
        alias="computeProfile",
        description="gpu uses KServe's presets; cpu adds the chart's kserve-config-llm-cpu config.",
    )
    kv_cache_space_gi: int | None = Field(
        default=None,
        alias="kvCacheSpaceGi",
        # Not rejected below 1 but raised to 1 with a warning condition, as the Go provider clamped
        # it: an Instance that served there must keep serving here.
        ge=INT32_MIN,
        le=INT32_MAX,
        description="KV cache size in GiB (VLLM_CPU_KVCACHE_SPACE); cpu profile only, vLLM sizes it "
        "from free memory when unset. Values below 1 are raised to 1.",
    )
    kv_cache_offloading: KvCacheOffloading | None = Field(
        default=None,
        alias="kvCacheOffloading",
        description="KV-cache offloading to CPU RAM and a disk tier (KServe's spec.kvCacheOffloading, vLLM 0.22+).",
    )
    base_refs: list[Annotated[str, Field(min_length=1, max_length=253, pattern=OBJECT_NAME_PATTERN)]] = Field(
        default_factory=list,
        alias="baseRefs",
        description="LLMInferenceServiceConfig names merged after the provider's presets.",
    )
    config: str | dict[str, Any] | None = Field(
        default=None,
        description="Inline LLMInferenceServiceConfig spec body (YAML), applied as <instance>-config "
        "and merged last; the Instance's own fields still win over it.",
    )
    disable_storage_initializer: Flag | None = Field(
        default=None,
        alias="disableStorageInitializer",
        description="Skip KServe's storage-initializer; vLLM then loads the model itself.",
    )
    lora: LoraSpec | None = Field(default=None, description="LoRA adapters and limits.")
    lora_deployment: Literal["disabled", "enabled"] | None = Field(
        default=None,
        alias="loraDeployment",
        description="enabled serves the adapters chosen in loraSlot1..3 from the chart's catalog.",
    )
    lora_slot1: str | None = Field(default=None, alias="loraSlot1", description="Catalog adapter name.")
    lora_slot2: str | None = Field(default=None, alias="loraSlot2", description="Catalog adapter name.")
    lora_slot3: str | None = Field(default=None, alias="loraSlot3", description="Catalog adapter name.")

    @field_validator("model_uri")
    @classmethod
    def _model_uri(cls, value: str) -> str:
        problem = uri_problem(value)
        if problem is not None:
            raise rule_error(f"invalid {ENGINE_PREFIX}.modelURI {quote(value)}: {problem}")
        return value

    @field_validator("model_name", "lora_slot1", "lora_slot2", "lora_slot3", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: Any) -> Any:
        # Go used "" for unset; the UI still sends empty strings for untouched text fields.
        if isinstance(value, str):
            return value.strip() or None
        return value

    @field_validator("model_name")
    @classmethod
    def _model_name_printable(cls, value: str | None) -> str | None:
        # It becomes a vLLM argument and the `model` clients send: a newline or a bidirectional
        # override there would be invisible in every listing.
        bad = unprintable(value) if value is not None else None
        if bad is not None:
            raise rule_error(f"{ENGINE_PREFIX}.modelName contains the unprintable character {bad}")
        return value

    @field_validator("compute_profile", mode="before")
    @classmethod
    def _compute_profile(cls, value: Any) -> Any:
        # Compared case-insensitively, as the Go provider did.
        if isinstance(value, str):
            return value.strip().lower() or "gpu"
        return value

    @field_validator("lora_deployment", mode="before")
    @classmethod
    def _lora_deployment(cls, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            if not text:
                return None
            if text not in ("disabled", "enabled"):
                raise rule_error(f'{ENGINE_PREFIX}.loraDeployment must be "disabled" or "enabled"')
            return text
        return value

    @field_validator("config")
    @classmethod
    def _config(cls, value: str | dict[str, Any] | None) -> str | dict[str, Any] | None:
        if value is not None:
            try:
                parse_config(value)
            except ConfigError as exc:
                raise rule_error(f"invalid {ENGINE_PREFIX}.config: {exc}") from None
        return value

    @model_validator(mode="after")
    def _data_or_pipeline(self) -> LlmEngineParameters:
        if (self.data_parallel_size or 0) > 1 and (self.pipeline_parallel_size or 0) > 1:
            raise rule_error(
                f"{ENGINE_PREFIX}.dataParallelSize and pipelineParallelSize are mutually exclusive; set only one"
            )
        return self

    def config_spec(self) -> dict[str, Any] | None:
        """The inline config body, or None when there is none (validated on construction)."""
        return parse_config(self.config) if self.config is not None else None

    @property
    def cpu(self) -> bool:
        return self.compute_profile == "cpu"

    @property
    def kv_cache_space(self) -> int | None:
        """The CPU KV cache in GiB that vLLM gets: kvCacheSpaceGi raised to at least 1; None on GPU
        (where vLLM ignores it) or when unset."""
        if not self.cpu or self.kv_cache_space_gi is None:
            return None
        return max(self.kv_cache_space_gi, MIN_KV_CACHE_SPACE_GI)

    @property
    def data_parallel(self) -> int | None:
        """dataParallelSize when it asks for more than one rank, else None (1 is a no-op)."""
        size = self.data_parallel_size
        return size if size is not None and size > 1 else None

    def served_model_name(self, instance_name: str) -> str:
        return self.model_name or instance_name

    def lora_slots(self) -> list[tuple[str, str]]:
        """(field, adapter name) of the non-blank catalog slots, in slot order."""
        slots = (("loraSlot1", self.lora_slot1), ("loraSlot2", self.lora_slot2), ("loraSlot3", self.lora_slot3))
        return [(field, name) for field, name in slots if name]
