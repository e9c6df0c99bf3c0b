"""The llm topology's rules across fields (provider.rules.cross_field): where the form carries each,
an example the form and the provider both refuse, and what the form cannot express."""

from __future__ import annotations

from typing import Final

from provider.rules.cross_field import CrossFieldRule, CrossFieldRules, FormLessRule

P: Final = "spec.components.llmEngine.parameters."
KV: Final = "spec.components.llmEngine.parameters.kvCacheOffloading."
MEMORY: Final = "spec.components.llmEngine.resources.limits.memory"

RULES: Final = CrossFieldRules(
    in_form=(
        CrossFieldRule(
            "GPUs per replica at least tensor x pipeline x data parallel size (validation._check_gpus)",
            form_field=P + "gpuCount",
            reads=(
                P + "gpuCount",
                P + "computeProfile",
                P + "tensorParallelSize",
                P + "pipelineParallelSize",
                P + "dataParallelSize",
            ),
            example={P + "tensorParallelSize": 2, P + "gpuCount": 1},
            provider_says="llmEngine.resources.limits.nvidia.com/gpu is 1, but the parallelism needs 2 GPUs per pod",
        ),
        CrossFieldRule(
            "pipeline and data parallelism are mutually exclusive (LlmEngineParameters._data_or_pipeline)",
            form_field=P + "pipelineParallelSize",
            reads=(P + "pipelineParallelSize", P + "dataParallelSize"),
            example={P + "pipelineParallelSize": 2, P + "dataParallelSize": 2},
            provider_says="llmEngine.parameters.dataParallelSize and pipelineParallelSize are mutually exclusive",
        ),
        CrossFieldRule(
            "the CPU KV-cache tier below the memory limit (kv_offloading.check_against_resources)",
            form_field=KV + "cpu",
            reads=(KV + "cpu", MEMORY),
            example={KV + "cpu": 16, MEMORY: 16},
            provider_says="llmEngine.parameters.kvCacheOffloading.cpu (16Gi) must be less than "
            "llmEngine.resources.limits.memory",
        ),
        CrossFieldRule(
            "an existing claim needs its name (FileSystemTier)",
            form_field=KV + "fileSystem.volume",
            reads=(KV + "fileSystem.volume", KV + "fileSystem.claimName"),
            example={KV + "cpu": 4, KV + "fileSystem.volume": "claim"},
            provider_says="llmEngine.parameters.kvCacheOffloading.fileSystem.claimName is required with volume claim",
        ),
        CrossFieldRule(
            "a node-local disk or a claim per pod needs its size (FileSystemTier)",
            form_field=KV + "fileSystem.volume",
            reads=(KV + "fileSystem.volume", KV + "fileSystem.size"),
            example={KV + "cpu": 4, KV + "fileSystem.volume": "ephemeralClaim"},
            provider_says="llmEngine.parameters.kvCacheOffloading.fileSystem.size is required with volume "
            "ephemeralClaim",
        ),
        CrossFieldRule(
            "a size only for a node-local disk or a claim per pod (FileSystemTier)",
            form_field=KV + "fileSystem.size",
            reads=(KV + "fileSystem.size", KV + "fileSystem.volume"),
            example={
                KV + "cpu": 4,
                KV + "fileSystem.volume": "claim",
                KV + "fileSystem.claimName": "kv",
                KV + "fileSystem.size": 10,
            },
            provider_says="llmEngine.parameters.kvCacheOffloading.fileSystem.size does not apply to volume claim",
        ),
        CrossFieldRule(
            "LoRA enabled needs an adapter slot (adapters._catalog_adapters)",
            form_field=P + "loraDeployment",
            reads=(P + "loraDeployment", P + "loraSlot1", P + "loraSlot2", P + "loraSlot3"),
            example={P + "loraDeployment": "enabled"},
            provider_says="llmEngine.parameters.loraDeployment enabled requires at least one adapter slot",
        ),
        CrossFieldRule(
            "one adapter, one slot (adapters._catalog_adapters)",
            form_field=P + "loraSlot2",
            reads=(P + "loraSlot2", P + "loraSlot1"),
            example={
                P + "loraDeployment": "enabled",
                P + "loraSlot1": "qwen2.5-0.5b-sft",
                P + "loraSlot2": "qwen2.5-0.5b-sft",
            },
            provider_says='llmEngine.parameters.loraSlot1 and loraSlot2 both select adapter "qwen2.5-0.5b-sft"',
        ),
        CrossFieldRule(
            "one adapter, one slot (adapters._catalog_adapters)",
            form_field=P + "loraSlot3",
            reads=(P + "loraSlot3", P + "loraSlot1", P + "loraSlot2"),
            example={
                P + "loraDeployment": "enabled",
                P + "loraSlot2": "qwen2.5-0.5b-sft",
                P + "loraSlot3": "qwen2.5-0.5b-sft",
            },
            provider_says='llmEngine.parameters.loraSlot2 and loraSlot3 both select adapter "qwen2.5-0.5b-sft"',
        ),
    ),
    form_less=(
        FormLessRule(
            "an adapter made for another base model than the Instance's",
            "a CEL rule sees the form's values, not the catalog's base models; each option's label names "
            "its base model",
        ),
        FormLessRule(
            "the inline config's pod settings within the namespace's Pod Security level",
            "the inline config is YAML the form takes as text, and the level is the namespace's",
        ),
    ),
)
