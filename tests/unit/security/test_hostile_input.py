"""Hostile or careless input: every kind gets a specific message naming the field, none reaches the
API server. Each case is (what, the Instance, the message or its beginning)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from actors.cache.limits import InstanceLimits
from actors.interface import ValidationFailed
from provider.kserve import KServeProvider
from provider.model.settings import ProviderSettings
from tests.support.instances import llm_instance
from tests.support.llm_topology import CATALOG

PROVIDER = KServeProvider(ProviderSettings())
LONG_NAME = "a" * 64


def llm(engine: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    return llm_instance(engine=engine, **kwargs)


def predictor(params: dict[str, Any] | None = None, component: dict[str, Any] | None = None) -> dict[str, Any]:
    obj = llm_instance(topology_type="predictor", with_component=False)
    obj["spec"]["components"] = {
        "predictor": {
            "type": "modelServer",
            "parameters": {"modelFormat": "sklearn", "storageURI": "gs://b/m", **(params or {})},
            **(component or {}),
        }
    }
    return obj


def renamed(obj: dict[str, Any], name: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"]["name"] = name
    return out


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"a": 1}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def config(text: str) -> dict[str, Any]:
    return llm({"config": text})


CASES: list[tuple[str, dict[str, Any], str]] = [
    ("name over 63 characters", renamed(llm(), LONG_NAME), "metadata.name is 64 characters long; at most 63"),
    ("name with dots", renamed(llm(), "a.b"), 'metadata.name "a.b" is not a valid name for the KServe object'),
    ("predictor name over 63", renamed(predictor(), "p" * 100), "metadata.name is 100 characters long"),
    ("replicas over int32", llm(component={"replicas": 2**31}), "llmEngine.replicas is 2147483648; at most 2147483647"),
    ("replicas 10^15", llm(component={"replicas": 10**15}), "llmEngine.replicas is 1000000000000000; at most"),
    ("predictor replicas over int32", predictor(component={"replicas": 2**31}), "predictor.replicas is 2147483648"),
    ("tensorParallelSize over int32", llm({"tensorParallelSize": 2**31}), "llmEngine.parameters.tensorParallelSize: "),
    ("minReplicas over int32", predictor({"minReplicas": 2**40}), "predictor.parameters.minReplicas: "),
    ("modelName with a newline", llm({"modelName": "a\nb"}), "llmEngine.parameters.modelName contains the unprintable character \\n"),
    ("modelName with U+202E", llm({"modelName": "ab\u202ec"}), "llmEngine.parameters.modelName contains the unprintable character \\u202e"),
    ("modelURI of 40 000 characters", llm({"modelURI": "hf://" + "a" * 40_000}), 'invalid llmEngine.parameters.modelURI "hf://aaaa'),
    ("modelURI with a control character", llm({"modelURI": "hf://org/m\x07"}), 'invalid llmEngine.parameters.modelURI "hf://org/m\\u0007": must not contain unprintable characters'),
    ("storageURI of 40 000 characters", predictor({"storageURI": "gs://" + "b" * 40_000}), "predictor.parameters.storageURI is 40005 characters long; at most 2048"),
    ("storageURI with U+202E", predictor({"storageURI": "gs://b/\u202em"}), "predictor.parameters.storageURI contains the unprintable character \\u202e"),
    ("bad annotation key", llm(component={"service": {"annotations": {"bad key!": "v"}}}), 'llmEngine.service.annotations has the invalid key "bad key!"'),
    ("annotation key with an empty prefix", llm(component={"service": {"annotations": {"/x": "v"}}}), 'llmEngine.service.annotations has the invalid key "/x": its prefix'),
    ("annotation key over 63", llm(component={"service": {"annotations": {"k" * 64: "v"}}}), "llmEngine.service.annotations has the invalid key"),
    ("resource name with a newline", llm(component={"resources": {"limits": {"cpu\n": "1"}}}), 'llmEngine.resources.limits has the invalid key "cpu\\n"'),
    ("invalid quantity", llm(component={"resources": {"limits": {"cpu": "lots"}}}), "llmEngine.resources.limits.cpu: 'lots' is not a valid quantity"),
    ("image with spaces", llm(component={"image": "repo/x y"}), 'llmEngine.image "repo/x y" is not a valid image reference'),
    ("image with a newline", llm(component={"image": "repo/x\n:latest"}), "llmEngine.image contains the unprintable character \\n"),
    ("version with a control character", llm(version="v1\x1b[31m"), "spec.version contains the unprintable character \\x1b"),
    ("component version with U+2066", llm(component={"version": "0.20\u2066"}), "llmEngine.version contains the unprintable character \\u2066"),
    ("tracingEndpoint with a newline", llm(topology={"enableTracing": True, "tracingEndpoint": "http://c\n:4317"}), "topology.parameters.tracingEndpoint: must be a printable URL"),
    ("adapter URI of 40 000", llm({"lora": {"adapters": [{"name": "ad", "uri": "hf://" + "x" * 40_000}]}}), 'invalid llmEngine.parameters.lora.adapters[0].uri "hf://xxxx'),
    ("adapter name with a slash", llm({"lora": {"adapters": [{"name": "a/b", "uri": "hf://o/a"}]}}), 'llmEngine.parameters.lora.adapters[0].name "a/b" is not a valid adapter name'),
    ("YAML alias bomb in config", config(
        'a: &a ["x","x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n'
        "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
        "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"), "invalid llmEngine.parameters.config: the document expands to more than 10000 nodes"),
    ("6 KB of nested brackets in config", config("template: " + "[" * 3000 + "]" * 3000), "invalid llmEngine.parameters.config: the document nests deeper than 32 levels"),
    ("config over 32 KiB", config("template: {}\n#" + "x" * 40_000), "invalid llmEngine.parameters.config: the document is"),
    ("privileged container in config", config("template:\n  containers:\n  - name: main\n    securityContext: {privileged: true}\n"), "llmEngine.parameters.config.template.containers[0].securityContext.privileged: privileged: true is not allowed"),
    ("hostPID in config", config("template: {hostPID: true}"), "llmEngine.parameters.config.template.hostPID: hostPID: true is not allowed by the Pod Security Standard 'restricted'"),
    ("hostPath / in the worker", config("worker:\n  volumes: [{name: r, hostPath: {path: /}}]\n"), "llmEngine.parameters.config.worker.volumes[0].hostPath: a hostPath volume is not allowed"),
    ("serviceAccountName in prefill", config("prefill:\n  template: {serviceAccountName: admin}\n"), "llmEngine.parameters.config.prefill.template.serviceAccountName: choosing the pod's ServiceAccount is not allowed"),
    ("Secret volume in the scheduler", config("router:\n  scheduler:\n    template:\n      volumes: [{name: s, secret: {secretName: db}}]\n"), "llmEngine.parameters.config.router.scheduler.template.volumes[0].secret: referencing Secrets is not allowed"),
    ("runAsUser 0 in config", config("template:\n  securityContext: {runAsUser: 0}\n"), "llmEngine.parameters.config.template.securityContext.runAsUser: running as user 0 (root) is not allowed"),
    ("unknown topology", llm_instance(topology_type="bogus"), 'unsupported topology "bogus"'),
]  # fmt: skip


@pytest.mark.parametrize(("what", "obj", "message"), CASES, ids=[c[0] for c in CASES])
def test_hostile_input_gets_a_specific_message(what: str, obj: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationFailed) as caught:
        PROVIDER.check(obj, CATALOG)
    assert caught.value.message.startswith(message), caught.value.message
    assert caught.value.message.isprintable()
    assert len(caught.value.message) < 1000


def test_there_are_at_least_34_kinds() -> None:
    assert len(CASES) + len(SPEC_BOUNDS) >= 34


SPEC_BOUNDS: list[tuple[str, dict[str, Any], str]] = [
    ("parameters of 1.4 MB", llm({"config": {"x": "y" * 1_400_000}}), "spec is 1400205 bytes as JSON, over this provider's limit of 65536"),
    ("spec nested 40 deep", llm({"config": {"template": nested(40)}}), "spec.components.llmEngine.parameters.config.template.a.a"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "obj", "message"), SPEC_BOUNDS, ids=[c[0] for c in SPEC_BOUNDS])
def test_spec_bounds_are_named(what: str, obj: dict[str, Any], message: str) -> None:
    problem = InstanceLimits().problem(obj)
    assert problem is not None and problem.startswith(message), problem


def test_a_valid_instance_still_passes() -> None:
    PROVIDER.check(llm({"config": "template:\n  containers:\n  - name: main\n    args: [--enforce-eager]\n"}), CATALOG)
    PROVIDER.check(predictor(), CATALOG)
