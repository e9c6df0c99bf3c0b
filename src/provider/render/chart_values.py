"""Helm values of the provider chart → the environment its Deployment gives the provider container.

`deployment_env` is the one mapping from chart values to the provider's settings: `provider-kserve
render -f values.yaml` derives the settings (`ProviderSettings.from_env`) and the catalogs from its
result, exactly as the controller derives them from the environment the chart's Deployment
template (charts/provider-kserve/templates/deployment.yaml) sets. The template stays the
deployment's source; `tests/integration/chart/test_render_values.py` renders it with `helm template` for a
range of values and proves the two agree variable by variable.

`load_values` merges values files over the chart's own values.yaml as Helm does: mappings merge key
by key, anything else replaces, and a `null` deletes a key the chart defines (its default applies no
longer). Plain `extraEnv` entries are applied after the chart's variables, as in the pod, where the
last definition of a variable wins; `valueFrom` entries cannot be resolved offline and are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from provider.model.catalog import LORA_CATALOG_ENV, MODEL_CATALOG_ENV

CHART_NAME: Final = "provider-kserve"
DEFAULT_RELEASE: Final = "provider-kserve"
# The namespace the chart's README installs into.
DEFAULT_NAMESPACE: Final = "kserve-system"

# Each provider setting and the chart value it comes from (for --help and messages).
VALUE_OF: Final[Mapping[str, str]] = {
    "HF_TOKEN_SECRET_NAME": "huggingface.tokenSecretName",
    LORA_CATALOG_ENV: "loraAdapters",
    MODEL_CATALOG_ENV: "models",
    "ENABLE_POD_MONITOR": "metrics.podMonitor.enabled",
    "POD_MONITOR_INTERVAL": "metrics.podMonitor.interval",
    "LLM_TRACING_ENDPOINT": "tracing.llm.otlpEndpoint",
    "LLM_TRACING_ALL": "tracing.llm.all",
    "AI_GATEWAY_ENABLED": "aiGateway.enabled",
    "AI_GATEWAY_NAME": "the release name (<fullname>-ai-gateway)",
    "AI_GATEWAY_NAMESPACE": "the release namespace",
    "AI_GATEWAY_SCHEME": "aiGateway.scheme, https with aiGateway.tls.enabled",
    "AI_GATEWAY_PORT": "aiGateway.listener.port, 443 with aiGateway.tls.enabled",
    "AI_GATEWAY_HOSTNAME": "aiGateway.tls.hostname, with aiGateway.tls.enabled",
    "AI_GATEWAY_RATE_LIMIT_REDIS_URL": "aiGateway.rateLimitRedisURL",
    "POD_SECURITY_DEFAULT_LEVEL": "podSecurity.defaultLevel",
    "POD_SECURITY_ALLOW_SERVICE_ACCOUNT": "podSecurity.allowServiceAccount",
    "POD_SECURITY_ALLOW_SECRET_REFERENCES": "podSecurity.allowSecretReferences",
}


class ValuesError(ValueError):
    """A values file that cannot be read as Helm values."""


def merge_values(base: Mapping[str, Any], override: Mapping[str, Any], *, defaults: bool = True) -> dict[str, Any]:
    """`override` over `base` with Helm's rules: maps merge key by key, anything else replaces.
    Over the chart's defaults (`defaults`), a null deletes a key they define and stays null
    otherwise; between values files it is just a value."""
    out = dict(base)
    for key, value in override.items():
        if value is None and defaults and key in out:
            del out[key]
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_values(out[key], value, defaults=defaults)
        else:
            out[key] = value
    return out


def _read(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ValuesError(f"{path}: not YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValuesError(f"{path}: Helm values must be a mapping, not {type(data).__name__}")
    return data


def load_values(chart: Path, files: Iterable[Path]) -> dict[str, Any]:
    """The chart's values.yaml with `files` merged over it, later files winning (as `helm -f`).
    Raises OSError, ValuesError."""
    supplied: dict[str, Any] = {}
    for path in files:
        supplied = merge_values(supplied, _read(path), defaults=False)
    return merge_values(_read(chart / "values.yaml"), supplied)


def _get(values: Mapping[str, Any], dotted: str) -> Any:
    node: Any = values
    for key in dotted.split("."):
        node = node.get(key) if isinstance(node, Mapping) else None
    return node


def _text(value: Any, *, nil: str = "") -> str:
    """A value as Go's templates print it: a missing or null value is empty (`quote`, a plain
    `{{ }}`), except through `toString`, which prints `<nil>` (pass `nil="<nil>"`)."""
    if value is None:
        return nil
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _json(value: Any) -> str:
    """Sprig's `toJson`: Go's encoding/json, keys sorted, no spaces."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _trunc(name: str) -> str:
    """`trunc 63 | trimSuffix "-"`."""
    cut = name[:63]
    return cut[:-1] if cut.endswith("-") else cut


def fullname(values: Mapping[str, Any], release: str) -> str:
    """_helpers.tpl `provider-kserve.fullname`."""
    if override := _get(values, "fullnameOverride"):
        return _trunc(str(override))
    name = str(_get(values, "nameOverride") or CHART_NAME)
    return _trunc(release if name in release else f"{release}-{name}")


def deployment_env(values: Mapping[str, Any], *, release: str, namespace: str) -> dict[str, str]:
    """The provider container's environment for `values` installed as `release` into `namespace`
    (fieldRefs to the pod's namespace resolved), mirroring templates/deployment.yaml."""
    tls = bool(_get(values, "aiGateway.tls.enabled"))
    env = {
        "POD_NAMESPACE": namespace,
        "HF_TOKEN_SECRET_NAME": _text(_get(values, "huggingface.tokenSecretName")),
        LORA_CATALOG_ENV: _json(_get(values, "loraAdapters") or []),
        MODEL_CATALOG_ENV: _json(_get(values, "models") or []),
        "ENABLE_POD_MONITOR": _text(_get(values, "metrics.podMonitor.enabled"), nil="<nil>"),
        "POD_MONITOR_INTERVAL": _text(_get(values, "metrics.podMonitor.interval")),
        "LLM_TRACING_ENDPOINT": _text(_get(values, "tracing.llm.otlpEndpoint")),
        "LLM_TRACING_ALL": _text(_get(values, "tracing.llm.all"), nil="<nil>"),
        "AI_GATEWAY_ENABLED": _text(_get(values, "aiGateway.enabled"), nil="<nil>"),
        "AI_GATEWAY_NAME": _trunc(f"{fullname(values, release)}-ai-gateway"),
        "AI_GATEWAY_NAMESPACE": namespace,
        "AI_GATEWAY_SCHEME": "https" if tls else _text(_get(values, "aiGateway.scheme")),
        "AI_GATEWAY_PORT": "443" if tls else _text(_get(values, "aiGateway.listener.port")),
        "AI_GATEWAY_HOSTNAME": _text(_get(values, "aiGateway.tls.hostname")) if tls else "",
        "AI_GATEWAY_RATE_LIMIT_REDIS_URL": _text(_get(values, "aiGateway.rateLimitRedisURL")),
        "POD_SECURITY_DEFAULT_LEVEL": _text(_get(values, "podSecurity.defaultLevel")),
        "POD_SECURITY_ALLOW_SERVICE_ACCOUNT": _text(_get(values, "podSecurity.allowServiceAccount"), nil="<nil>"),
        "POD_SECURITY_ALLOW_SECRET_REFERENCES": _text(_get(values, "podSecurity.allowSecretReferences"), nil="<nil>"),
    }
    otel = _get(values, "otel") or {}
    if (endpoint := _get(values, "tracing.otlpEndpoint")) and "OTEL_EXPORTER_OTLP_ENDPOINT" not in otel:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = _text(endpoint)
    for key in sorted(otel):
        env[str(key)] = _text(otel[key], nil="<nil>")
    for entry in _get(values, "extraEnv") or []:
        if isinstance(entry, Mapping) and "name" in entry and "valueFrom" not in entry:
            env[str(entry["name"])] = _text(entry.get("value"))
    return env
