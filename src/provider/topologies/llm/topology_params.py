"""`spec.topology.parameters` of the `llm` topology: how clients reach the model, gateway routing,
prefill/decode, metrics and tracing (see provider.topologies.llm.params for the conventions)."""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import ConfigDict, Field, field_validator

from provider.rules.fields import URI_MAX, unprintable
from provider.rules.quote import quote
from provider.topologies.llm.param_base import INT32_MAX, Flag, StrictParams, rule_error

# -- topology parameters -------------------------------------------------------------------------

ExternalAccess = Literal["ClusterIP", "LoadBalancer", "NodePort", "EnvoyAIGateway"]
EXTERNAL_ACCESS_VALUES: Final[tuple[str, ...]] = ("ClusterIP", "LoadBalancer", "NodePort", "EnvoyAIGateway")


class LlmTopologyParameters(StrictParams):
    """Parameters of the `llm` topology."""

    model_config = ConfigDict(title="LlmTopologyParameters")

    external_access: ExternalAccess | None = Field(
        default=None,
        alias="externalAccess",
        description="How clients reach the model. Wins over enableAIGateway and llmEngine.service.serviceType.",
    )
    enable_gateway_routing: Flag = Field(
        default=False,
        alias="enableGatewayRouting",
        description="KServe's Gateway API route and endpoint-picker scheduler.",
    )
    enable_ai_gateway: Flag = Field(
        default=False,
        alias="enableAIGateway",
        description="Legacy alias of externalAccess EnvoyAIGateway, used only when externalAccess is unset.",
    )
    token_limit_per_hour: int | None = Field(
        default=None,
        alias="tokenLimitPerHour",
        le=INT32_MAX,
        description="Tokens per user and hour for each served model (the base model and every LoRA adapter) "
        "on the Envoy AI Gateway; 1000 when the gateway enforces quotas and this is unset.",
        json_schema_extra={"minimum": 1},
    )
    enable_prefill: Flag = Field(default=False, alias="enablePrefill", description="Prefill/decode disaggregation.")
    prefill_replicas: int | None = Field(
        default=None,
        alias="prefillReplicas",
        ge=0,
        le=INT32_MAX,
        description="Prefill pods (with enablePrefill).",
    )
    enable_metrics: Flag | None = Field(
        default=None,
        alias="enableMetrics",
        description="A PodMonitor for vLLM's metrics (default on; skipped without the Prometheus Operator).",
    )
    enable_tracing: Flag = Field(
        default=False, alias="enableTracing", description="OpenTelemetry tracing through KServe."
    )
    tracing_endpoint: str | None = Field(
        default=None,
        alias="tracingEndpoint",
        description="OTLP collector URL (with enableTracing); KServe's default collector when unset.",
        examples=["http://otel-collector.observability:4317"],
    )

    @field_validator("external_access", mode="before")
    @classmethod
    def _external_access(cls, value: Any) -> Any:
        if isinstance(value, str):
            if not value:
                return None
            if value not in EXTERNAL_ACCESS_VALUES:
                raise rule_error("externalAccess must be one of ClusterIP, LoadBalancer, NodePort or EnvoyAIGateway")
        return value

    @field_validator("tracing_endpoint")
    @classmethod
    def _tracing_endpoint(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip()
        if not value:
            return None
        scheme, sep, rest = value.partition("://")
        host = rest.split("/", 1)[0]
        if len(value) > URI_MAX or unprintable(value) is not None:
            raise ValueError(f"must be a printable URL of at most {URI_MAX} characters")
        if not sep or scheme not in ("http", "https") or not host or any(ch.isspace() for ch in value):
            raise ValueError(
                f"{quote(value)} is not an http:// or https:// URL (e.g. http://otel-collector.observability:4317)"
            )
        return value

    def uses_ai_gateway(self) -> bool:
        """The Envoy AI Gateway fronts the model: externalAccess says so, or the legacy flag does
        while externalAccess is unset."""
        if self.external_access is not None:
            return self.external_access == "EnvoyAIGateway"
        return self.enable_ai_gateway

    def resolved_service_type(self) -> str | None:
        """The Service type externalAccess asks for; None defers to llmEngine.service.serviceType."""
        if self.external_access in ("LoadBalancer", "NodePort"):
            return self.external_access
        if self.external_access in ("ClusterIP", "EnvoyAIGateway"):
            return "ClusterIP"
        return None

    def gateway_routing(self) -> bool:
        """KServe's scheduler (InferencePool) is needed: Gateway API routing or the AI Gateway."""
        return self.enable_gateway_routing or self.uses_ai_gateway()

    def metrics_enabled(self) -> bool:
        return True if self.enable_metrics is None else self.enable_metrics
