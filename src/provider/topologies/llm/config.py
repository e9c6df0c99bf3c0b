"""The inline `llmEngine.parameters.config`: an LLMInferenceServiceConfig spec body.

It becomes the Instance-owned LLMInferenceServiceConfig `<instance>-config`, attached last in
baseRefs. It is checked here, at validation time, because the API server would only reject it at
apply time (a type mismatch), or worse silently prune it (an unknown, misspelled key): both far
away from the field the user wrote. The YAML is read within bounds (provider.rules.bounded_yaml: size,
nesting, alias expansion), so a small document cannot turn into a huge request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final

from actors import KubeObject, Resource
from provider.model import names
from provider.model.kinds import LLM_INFERENCE_SERVICE, LLM_INFERENCE_SERVICE_CONFIG
from provider.rules import bounded_yaml
from provider.rules.quote import quote

# Top-level LLMInferenceServiceSpec fields (serving.kserve.io_llminferenceserviceconfigs.yaml,
# v1alpha2) and the JSON type each must have.
SPEC_FIELDS: Final[Mapping[str, type]] = {
    "annotations": dict,
    "baseRefs": list,
    "kvCacheOffloading": dict,
    "labels": dict,
    "model": dict,
    "parallelism": dict,
    "prefill": dict,
    "replicas": int,
    "router": dict,
    "scaling": dict,
    "storageInitializer": dict,
    "template": dict,
    "tracing": dict,
    "worker": dict,
}
_JSON_TYPE: Final[Mapping[type, str]] = {dict: "a mapping", list: "a list", int: "an integer"}
# Where an LLMInferenceServiceSpec holds pod specs (PodSpec fields, merged over KServe's presets).
POD_SPEC_PATHS: Final = (
    ("template",),
    ("worker",),
    ("prefill", "template"),
    ("prefill", "worker"),
    ("router", "scheduler", "template"),
)
# Where it holds the labels and annotations KServe copies onto those pods' templates.
POD_METADATA_PATHS: Final[tuple[tuple[str, ...], ...]] = ((), ("prefill",), ("router", "scheduler"))


class ConfigError(ValueError):
    """Why the inline config cannot be used (the message names no field: the caller adds it)."""


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return type(value).__name__


def parse_config(value: str | Mapping[str, Any]) -> dict[str, Any] | None:
    """The spec body, or None when the config is blank/empty. Raises ConfigError."""
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            body = bounded_yaml.load(value)
        except bounded_yaml.YamlBoundError as exc:
            raise ConfigError(str(exc)) from None
    else:
        body = dict(value)
    if body is None:
        return None
    if not isinstance(body, dict):
        raise ConfigError(f"expected a mapping (an LLMInferenceServiceSpec body), got {_describe(body)}")
    for key, item in body.items():
        expected = SPEC_FIELDS.get(str(key))
        if expected is None:
            known = ", ".join(sorted(SPEC_FIELDS))
            raise ConfigError(f"unknown field {quote(key)} (LLMInferenceServiceSpec fields: {known})")
        wrong_int = expected is int and (isinstance(item, bool) or not isinstance(item, int))
        if wrong_int or (expected is not int and not isinstance(item, expected)):
            raise ConfigError(f"{key} must be {_JSON_TYPE[expected]}, got {_describe(item)}")
    model = body.get("model")
    if isinstance(model, dict) and not model.get("uri"):
        # The CRD requires model.uri whenever model is present in a config.
        raise ConfigError("model.uri is required when model is set (the Instance's modelURI wins anyway)")
    return body or None


def pod_metadata(body: Mapping[str, Any] | None) -> Iterator[tuple[str, Any, Any]]:
    """The labels and annotations the config has KServe put on its pods, with their path in the
    config: (path, annotations, labels) for the service itself, the prefill pods and the scheduler."""
    for path in POD_METADATA_PATHS:
        node: Any = body
        for key in path:
            node = node.get(key) if isinstance(node, Mapping) else None
        if isinstance(node, Mapping) and (node.get("annotations") or node.get("labels")):
            yield ".".join(path), node.get("annotations"), node.get("labels")


def pod_specs(body: Mapping[str, Any] | None) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each pod spec the config sets, with its path in the config (e.g. `prefill.template`)."""
    for path in POD_SPEC_PATHS:
        node: Any = body
        for key in path:
            node = node.get(key) if isinstance(node, Mapping) else None
        if isinstance(node, Mapping):
            yield ".".join(path), node


def config_still_in_use(
    desired: Sequence[KubeObject], live: Callable[[Resource, str], KubeObject | None]
) -> KubeObject | None:
    """The Instance's `<name>-config`, kept while KServe still uses it although `desired` dropped it.

    KServe 0.20 holds an LLMInferenceServiceConfig with a finalizer while an LLMInferenceService
    uses it (spec.baseRefs or status.appliedConfigs) and looks at the config again only when a
    service naming it in spec.baseRefs changes. Deleted in the pass that drops it from baseRefs,
    the config stays Terminating for good (seen against the real controllers), and with it the
    Instance's deletion. So it goes one pass later: once KServe's status no longer lists it.
    """
    llmisvc = next((o for o in desired if o["kind"] == LLM_INFERENCE_SERVICE.kind), None)
    if llmisvc is None:
        return None  # the service goes too: its deletion releases the config
    name, namespace = llmisvc["metadata"]["name"], llmisvc["metadata"].get("namespace")
    config = names.config_name(name)
    if any(o["kind"] == LLM_INFERENCE_SERVICE_CONFIG.kind and o["metadata"]["name"] == config for o in desired):
        return None
    current = live(LLM_INFERENCE_SERVICE_CONFIG, config)
    served = live(LLM_INFERENCE_SERVICE, name)
    if current is None or served is None or (current.get("metadata") or {}).get("deletionTimestamp"):
        return None
    applied = ((served.get("status") or {}).get("appliedConfigs")) or []
    if not any(a.get("name") == config and a.get("namespace") in (None, namespace) for a in applied):
        return None
    return {
        "apiVersion": LLM_INFERENCE_SERVICE_CONFIG.api_version,
        "kind": LLM_INFERENCE_SERVICE_CONFIG.kind,
        "metadata": {"name": config, "namespace": current["metadata"].get("namespace", namespace)},
        "spec": current.get("spec") or {},
    }


KSERVE_CONFIG_FINALIZER: Final = "serving.kserve.io/llmisvcconfig-finalizer"
RELEASE_ANNOTATION: Final = "provider-kserve.openeverest.io/released-at"


def held_config(instance_name: str, live: Callable[[Resource, str], KubeObject | None]) -> KubeObject | None:
    """The Instance's `<name>-config` when it is being deleted, KServe's finalizer holds it, and no
    LLMInferenceService of the Instance uses it any more: KServe 0.20 can miss that moment (its
    config controller looks again only when a service naming the config in spec.baseRefs changes,
    and races its own status updates), so the provider touches the config to make it look."""
    config = live(LLM_INFERENCE_SERVICE_CONFIG, names.config_name(instance_name))
    meta = (config or {}).get("metadata") or {}
    if (
        config is None
        or not meta.get("deletionTimestamp")
        or KSERVE_CONFIG_FINALIZER not in (meta.get("finalizers") or [])
    ):
        return None
    served = live(LLM_INFERENCE_SERVICE, instance_name)
    if served is not None:
        refs = {r.get("name") for r in (served.get("spec") or {}).get("baseRefs") or []}
        refs |= {a.get("name") for a in (served.get("status") or {}).get("appliedConfigs") or []}
        if meta.get("name") in refs:
            return None  # still in use: KServe is right to hold it
    return config
