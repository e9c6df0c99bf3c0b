"""Our Provider through OpenEverest's form (tests.support.ui_form): what a new Instance posts, what
the form refuses, and that every example, loaded into the form and posted back, renders the same
objects as the example itself.

The form cannot set a few fields; an example that uses one is compared without it, and FORM_LESS
lists them (README "What the UI form sets"). The form adds its defaults to what an example says;
all of them render as their absence but FORM_DEFAULTS, which render as KServe's own default made
explicit: `render` of the body equals `render` of the example with FORM_DEFAULTS added.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from actors import ValidationFailed, effective_bundle, resolve_versions
from provider.kserve import KServeProvider
from provider.model.catalog import Catalogs, parse_lora_catalog
from provider.model.names import PROVIDER_NAME
from provider.model.settings import ProviderSettings
from provider.rules.cross_field import CrossFieldRule
from provider.topologies.llm.cross_field_rules import RULES as LLM_RULES
from provider.topologies.predictor.cross_field_rules import RULES as PREDICTOR_RULES
from tests.support import ui_form

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "charts" / "provider-kserve"
EXAMPLES = ROOT / "examples"
SETTINGS = ProviderSettings.from_env(
    {"HF_TOKEN_SECRET_NAME": "hf-token", "ENABLE_POD_MONITOR": "true", "POD_MONITOR_INTERVAL": "30s"}
)
CATALOGS = Catalogs(lora_adapters=parse_lora_catalog((EXAMPLES / "lora-catalog.json").read_text()))

# Fields of the examples the form has no field for: set with kubectl or everestctl only.
FORM_LESS = (
    "spec.components.llmEngine.service.annotations",
    "spec.components.llmEngine.service.loadBalancerService.sourceRanges",
)
# Form defaults that the LLMInferenceService shows (parallelism.expert: false,
# storageInitializer.enabled: true, KServe's defaults either way) where an Instance without them
# leaves the field out.
FORM_DEFAULTS = {
    "llm": {
        "spec.components.llmEngine.parameters.expertParallel": "false",
        "spec.components.llmEngine.parameters.disableStorageInitializer": "false",
    },
    "predictor": {},
}
# What every Instance has that is not a form field: the body gets providerRef and topology.type
# from the form itself; spec.version and a component's type are left to the provider's defaults.
ENVELOPE = ("apiVersion", "kind", "metadata.", "spec.providerRef.", "spec.topology.type", "spec.version")


def provider_spec() -> dict[str, Any]:
    """The Provider resource's spec as the chart renders it: the generated spec plus the catalogs."""
    spec: dict[str, Any] = yaml.safe_load((CHART / "generated" / "provider-spec.yaml").read_text())["spec"]
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    spec["uiSchema"]["llm"]["modelCatalog"] = [{"label": m["label"], "uri": m["uri"]} for m in values["models"]]
    spec["uiSchema"]["llm"]["loraCatalog"] = values["loraAdapters"]
    return spec


SPEC = provider_spec()
PROVIDERS = {PROVIDER_NAME: {"spec": SPEC}}
DEFAULT_BUNDLE = next(v["name"] for v in SPEC["versions"] if v.get("default"))


def form(topology: str) -> list[ui_form.Field]:
    return ui_form.fields(SPEC["uiSchema"][topology], SPEC)


def example(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    doc["metadata"].setdefault("namespace", "default")
    return doc


def render(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """What the controller applies for `obj`, its component versions resolved from its bundle."""
    resolved = resolve_versions(obj, PROVIDERS, effective_bundle(obj, PROVIDERS))
    objects = KServeProvider(SETTINGS, catalogs=CATALOGS).render(resolved, catalogs=CATALOGS)
    return sorted(objects, key=lambda o: (o["kind"], o["metadata"]["name"]))


def leaf_paths(obj: Any, prefix: str = "") -> set[str]:
    if isinstance(obj, dict) and obj:
        return {p for key, value in obj.items() for p in leaf_paths(value, f"{prefix}{key}.")}
    return {prefix.rstrip(".")}


def posted(name: str) -> dict[str, Any]:
    """The body the form posts for the example `name`: the example loaded into its topology's form
    (which must accept it), with the llm form's values carried along into a predictor body (the
    form keeps them when the user switches topology)."""
    doc = example(name)
    topology = doc["spec"]["topology"]["type"]
    fields = form(topology)
    values = ui_form.load(fields, doc)
    assert ui_form.problems(fields, values) == {}, f"{name} does not load into the form"
    meta = doc["metadata"]
    out = ui_form.body(
        fields, values, topology=topology, provider=PROVIDER_NAME, name=meta["name"], namespace=meta["namespace"]
    )
    if topology != "llm":
        llm = ui_form.fields(SPEC["uiSchema"]["llm"], SPEC)
        carried = ui_form.body(llm, ui_form.load(llm), topology="llm", provider="", name="", namespace="")
        out["spec"]["components"] = {**carried["spec"]["components"], **out["spec"]["components"]}
        out["spec"]["topology"]["parameters"] = carried["spec"]["topology"]["parameters"]
    return out


def without(obj: dict[str, Any], paths: set[str]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    for path in paths:
        *parents, last = path.split(".")
        node = out
        for part in parents:
            node = node.get(part) or {}
        node.pop(last, None)
    return out


EXAMPLE_NAMES = sorted(p.stem for p in EXAMPLES.glob("instance-*.yaml"))


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_each_example_round_trips_through_the_form(name: str) -> None:
    doc = example(name)
    body = posted(name)
    assert "version" not in body["spec"]
    assert all("type" not in component for component in body["spec"]["components"].values())
    form_paths = {f.path for f in form(doc["spec"]["topology"]["type"])}
    beyond = {
        p for p in leaf_paths(doc) if not p.startswith(ENVELOPE) and p not in form_paths and not p.endswith(".type")
    }
    unknown = {p for p in beyond if not p.startswith(FORM_LESS)}
    assert not unknown, f"{name} sets fields the form has no field for: {sorted(unknown)}"
    # Without spec.version the Instance follows the default bundle, the one the examples name
    # (only the informational annotation naming the bundle is then left out).
    assert doc["spec"].get("version") in (None, DEFAULT_BUNDLE)
    expected = without(doc, {*FORM_LESS, "spec.version"})
    for path, value in FORM_DEFAULTS[doc["spec"]["topology"]["type"]].items():
        if ui_form.get(expected, path) is None:
            ui_form.put(expected, path, value)
    assert render(body) == render(expected)


def test_the_examples_are_the_four_documented_ones() -> None:
    assert EXAMPLE_NAMES == ["instance-llm", "instance-llm-cpu", "instance-llm-lora", "instance-predictor"]


# -- a new Instance: what the form posts untouched ------------------------------------------------


def new_body(topology: str, **chosen: Any) -> dict[str, Any]:
    fields = form(topology)
    values = ui_form.load(fields)
    values.update(chosen)
    assert ui_form.problems(fields, values) == {}
    return ui_form.body(fields, values, topology=topology, provider=PROVIDER_NAME, name="new", namespace="models")


def test_a_new_llm_instance_posts_no_adapter_and_only_strings_for_selects() -> None:
    body = new_body("llm", **{"spec.components.llmEngine.parameters.modelURI": "hf://Qwen/Qwen2.5-0.5B-Instruct"})
    engine = body["spec"]["components"]["llmEngine"]
    assert not {"loraSlot1", "loraSlot2", "loraSlot3"} & set(engine["parameters"])
    assert "version" not in engine
    assert "gpuCount" not in engine["parameters"]  # untouched: the parallelism's count (one GPU)
    assert body["spec"]["topology"]["parameters"]["enableMetrics"] == "true"
    assert all(isinstance(v, str) for f in form("llm") if f.ui_type == "select" for v in f.options)
    render(body)  # the provider takes it as it is


def test_a_new_llm_instance_must_choose_its_model() -> None:
    fields = form("llm")
    assert ui_form.problems(fields, ui_form.load(fields)) == {"modelURI": "required"}


def test_a_new_predictor_instance_renders() -> None:
    body = new_body(
        "predictor",
        **{
            "spec.components.predictor.parameters.modelFormat": "sklearn",
            "spec.components.predictor.parameters.storageURI": "gs://b/model",
        },
    )
    assert body["spec"]["components"]["predictor"]["parameters"] == {
        "modelFormat": "sklearn",
        "storageURI": "gs://b/model",
        "minReplicas": 1,
    }
    render(body)


# -- what the form refuses (each of them the provider refuses too) --------------------------------

ENGINE = "spec.components.llmEngine.parameters."
TOPOLOGY = "spec.topology.parameters."
PREDICTOR = "spec.components.predictor.parameters."
KV = f"{ENGINE}kvCacheOffloading."
QWEN = {f"{ENGINE}modelURI": "hf://Qwen/Qwen2.5-0.5B-Instruct"}
SKLEARN = {f"{PREDICTOR}modelFormat": "sklearn", f"{PREDICTOR}storageURI": "gs://b/m"}


@pytest.mark.parametrize(
    ("topology", "chosen", "field"),
    [
        ("llm", {f"{ENGINE}computeProfile": "tpu"}, "computeProfile"),
        ("llm", {f"{ENGINE}expertParallel": "maybe"}, "expertParallel"),
        ("llm", {f"{ENGINE}loraSlot1": "unknown-adapter"}, "loraSlot1"),
        ("llm", {f"{TOPOLOGY}externalAccess": "LoadBalancr"}, "externalAccess"),
        ("llm", {f"{TOPOLOGY}enableMetrics": True}, "enableMetrics"),
        ("llm", {f"{ENGINE}modelURI": "hf://not/in-the-catalog"}, "modelURI"),
        ("llm", {"spec.components.llmEngine.replicas": 2.5}, "replicas"),
        ("llm", {f"{ENGINE}tensorParallelSize": 1.5}, "tensorParallelSize"),
        ("llm", {f"{ENGINE}gpuCount": 0}, "gpuCount"),
        ("llm", {f"{TOPOLOGY}tokenLimitPerHour": 100}, "tokenLimitPerHour"),
        ("llm", {f"{ENGINE}modelName": "m" * 254}, "modelName"),
        ("llm", {f"{KV}evictionPolicy": "arc"}, "evictionPolicy"),
        ("llm", {f"{KV}fileSystem.volume": "emptyDir"}, "volume"),
        ("llm", {f"{KV}cpu": 4, f"{KV}fileSystem.volume": "emptyDir", f"{KV}fileSystem.claimName": "kv"}, "claimName"),
        ("llm", {f"{KV}cpu": 4, f"{KV}fileSystem.volume": "claim", f"{KV}fileSystem.size": 10}, "size"),
        ("predictor", {f"{PREDICTOR}minReplicas": 5, f"{PREDICTOR}maxReplicas": 2}, "maxReplicas"),
        ("predictor", {f"{PREDICTOR}modelFormat": "Bad Format!"}, "modelFormat"),
        ("predictor", {f"{PREDICTOR}runtime": "Not_DNS"}, "runtime"),
        ("predictor", {f"{PREDICTOR}runtimeVersion": "-latest"}, "runtimeVersion"),
    ],
)
def test_the_form_refuses(topology: str, chosen: dict[str, Any], field: str) -> None:
    fields = form(topology)
    values = {**ui_form.load(fields), **(QWEN if topology == "llm" else SKLEARN), **chosen}
    assert field in ui_form.problems(fields, values)


@pytest.mark.parametrize("maximum", ["", 0, 1, 3])
def test_the_replica_pair_allows_an_empty_zero_or_larger_maximum(maximum: Any) -> None:
    fields = form("predictor")
    values = {**ui_form.load(fields), **SKLEARN, f"{PREDICTOR}minReplicas": 1, f"{PREDICTOR}maxReplicas": maximum}
    assert ui_form.problems(fields, values) == {}


def test_kv_cache_offloading_left_empty_or_set_whole_passes_the_form_and_the_provider() -> None:
    """The form posts "" for an untouched select or text: the tier rules must let that through."""
    fields = form("llm")
    untouched = {**ui_form.load(fields), **QWEN}
    assert ui_form.problems(fields, untouched) == {}
    tiers = {**QWEN, f"{KV}cpu": 4, f"{KV}fileSystem.volume": "emptyDir", f"{KV}fileSystem.size": 10}
    tiers["spec.components.llmEngine.resources.limits.memory"] = 32
    assert ui_form.problems(fields, {**ui_form.load(fields), **tiers}) == {}
    (service,) = [o for o in render(new_body("llm", **tiers)) if o["kind"] == "LLMInferenceService"]
    assert service["spec"]["kvCacheOffloading"] == {
        "cpu": "4Gi",
        "secondary": [{"fileSystem": {"emptyDir": {"size": "10Gi"}}}],
    }


def test_adapters_of_the_chosen_model_pass_the_form_and_the_provider() -> None:
    chosen = {**QWEN, f"{ENGINE}computeProfile": "cpu", f"{ENGINE}loraDeployment": "enabled"}
    chosen[f"{ENGINE}loraSlot1"] = "qwen2.5-0.5b-sft"
    render(new_body("llm", **chosen))


def test_the_form_cannot_stop_an_adapter_of_another_model_but_the_provider_does() -> None:
    chosen = {**QWEN, f"{ENGINE}computeProfile": "cpu", f"{ENGINE}loraDeployment": "enabled"}
    chosen[f"{ENGINE}loraSlot1"] = "smollm2-135m-sft"
    with pytest.raises(Exception, match="is for the base model"):
        render(new_body("llm", **chosen))


def test_the_lora_catalog_of_the_chart_and_of_the_examples_agree() -> None:
    chart = yaml.safe_load((CHART / "values.yaml").read_text())["loraAdapters"]
    assert json.loads((EXAMPLES / "lora-catalog.json").read_text()) == chart


RULES = {"llm": LLM_RULES, "predictor": PREDICTOR_RULES}


@pytest.mark.parametrize(
    ("topology", "rule"),
    [(t, r) for t, rules in RULES.items() for r in rules.in_form],
    ids=lambda v: v if isinstance(v, str) else v.form_field.rsplit(".", 1)[-1],
)
def test_a_rule_across_fields_is_refused_by_the_form_and_the_provider_alike(
    topology: str, rule: CrossFieldRule
) -> None:
    """Issue 38: what the provider refuses after the POST, the form refuses before it, on the
    rule's field; every rule the provider declares (provider.rules.cross_field) has its case here."""
    fields = form(topology)
    values = {**ui_form.load(fields), **(QWEN if topology == "llm" else SKLEARN), **rule.example}
    refused_by_form = ui_form.problems(fields, values)
    assert rule.form_field.rsplit(".", 1)[-1] in refused_by_form, refused_by_form
    posted = ui_form.body(fields, values, topology=topology, provider=PROVIDER_NAME, name="new", namespace="models")
    with pytest.raises(ValidationFailed) as refused:
        render(posted)
    assert rule.provider_says in refused.value.message


def test_every_rule_the_form_cannot_express_is_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    for rules in RULES.values():
        for rule in rules.form_less:
            assert rule.name in readme, rule.name


def test_raising_the_parallelism_alone_passes_the_form_and_asks_for_its_gpus() -> None:
    """The most likely way a form user got a Failed Instance: a parallelism of 2 beside the GPU
    field's old default of 1. Left empty now, the field posts nothing and the pod asks for 2."""
    fields = form("llm")
    values = {**ui_form.load(fields), **QWEN, f"{ENGINE}tensorParallelSize": 2}
    assert ui_form.problems(fields, values) == {}
    posted = new_body("llm", **QWEN, **{f"{ENGINE}tensorParallelSize": 2})
    (service,) = [o for o in render(posted) if o["kind"] == "LLMInferenceService"]
    assert service["spec"]["template"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2"
