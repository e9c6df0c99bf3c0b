"""Process-wide settings the provider chart passes as environment variables (kserve-behavior §1.6).

Read once at startup by `ProviderSettings.from_env` and handed to the topology handlers, so the
translation functions stay pure: they never look at `os.environ` themselves, and a test states the
settings it runs with.

Two deliberate departures from the Go provider, which compared strings to exactly `"true"`:

- flags accept true/1/yes/on/enabled and false/0/no/off/disabled in any case, and anything else
  is a startup error instead of a silent "off";
- `ENABLE_POD_MONITOR` defaults to on. The chart sets it from `metrics.podMonitor.enabled` (default
  true) and the Instance-level `enableMetrics` defaults to on as well; a cluster without the
  Prometheus Operator is handled by skipping the PodMonitor while its CRD is not served.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Final, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from provider.rules.error_messages import first_error_message
from provider.rules.pod_security import LEVELS, Level, PodPolicy

# A Prometheus duration as the PodMonitor CRD accepts it (e.g. 30s, 1m30s).
DURATION_PATTERN: Final = r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"

_TRUE: Final = frozenset({"true", "1", "yes", "on", "enabled"})
_FALSE: Final = frozenset({"false", "0", "no", "off", "disabled"})


def _flag(value: object) -> object:
    if not isinstance(value, str):
        return value
    text = value.lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise PydanticCustomError("flag", "invalid boolean value {value} (use true or false)", {"value": f'"{value}"'})


# A chart flag: the words above in any case, anything else an error naming the value.
_Flag = Annotated[bool, BeforeValidator(_flag)]


class SettingsError(ValueError):
    """A provider environment variable has a value the provider cannot use."""


class ProviderSettings(BaseModel):
    """Chart-level configuration of the provider process."""

    # Validated by alias from the environment (from_env), by name in code and tests.
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    hf_token_secret_name: str = Field(
        validation_alias="HF_TOKEN_SECRET_NAME",
        default="",
        description="Secret (key HF_TOKEN, in the Instance namespace) for gated Hugging Face models; "
        "empty disables the per-Instance model-puller ServiceAccount.",
    )
    ai_gateway_enabled: _Flag = Field(
        validation_alias="AI_GATEWAY_ENABLED", default=False, description="The chart installed the Envoy AI Gateway."
    )
    ai_gateway_name: str = Field(
        validation_alias="AI_GATEWAY_NAME", default="", description="Name of the shared Gateway."
    )
    ai_gateway_namespace: str = Field(
        validation_alias="AI_GATEWAY_NAMESPACE", default="", description="Namespace of the shared Gateway."
    )
    ai_gateway_scheme: Literal["http", "https"] = Field(
        validation_alias="AI_GATEWAY_SCHEME", default="http", description="Scheme of published gateway URLs."
    )
    ai_gateway_port_override: int | None = Field(
        validation_alias="AI_GATEWAY_PORT",
        default=None,
        ge=1,
        le=65535,
        description="Published gateway port; scheme default when unset.",
    )
    ai_gateway_hostname: str = Field(
        validation_alias="AI_GATEWAY_HOSTNAME",
        default="",
        description="Host published for the gateway instead of its address (TLS).",
    )
    ai_gateway_rate_limit_redis_url: str = Field(
        validation_alias="AI_GATEWAY_RATE_LIMIT_REDIS_URL",
        default="",
        description="Envoy Gateway's rate-limit Redis; token quotas are enforced only with it.",
    )
    enable_pod_monitor: _Flag = Field(
        validation_alias="ENABLE_POD_MONITOR", default=True, description="Create per-Instance PodMonitors."
    )
    pod_monitor_interval: str = Field(
        validation_alias="POD_MONITOR_INTERVAL",
        default="30s",
        pattern=DURATION_PATTERN,
        description="PodMonitor scrape interval.",
    )
    llm_tracing_endpoint: str = Field(
        validation_alias="LLM_TRACING_ENDPOINT",
        default="",
        description="The OTLP collector vLLM sends its spans to when an llm Instance enables tracing "
        "without an endpoint of its own (KServe's tracing preset's otel-collector:4317 otherwise).",
    )
    llm_tracing_all: _Flag = Field(
        validation_alias="LLM_TRACING_ALL",
        default=False,
        description="Every llm Instance's vLLM traces to llm_tracing_endpoint, enableTracing or not.",
    )
    pod_security_default: Level = Field(
        validation_alias="POD_SECURITY_DEFAULT_LEVEL",
        default="restricted",
        description="Pod Security Standard applied to an Instance's pod settings where its namespace has no "
        f"pod-security.kubernetes.io/enforce label ({', '.join(LEVELS)}).",
    )
    pod_security_allow_service_account: _Flag = Field(
        validation_alias="POD_SECURITY_ALLOW_SERVICE_ACCOUNT",
        default=False,
        description="Instances may choose their pods' ServiceAccount (inline config).",
    )
    pod_security_allow_secret_references: _Flag = Field(
        validation_alias="POD_SECURITY_ALLOW_SECRET_REFERENCES",
        default=False,
        description="Instances may reference Secrets in their pods (inline config).",
    )

    @field_validator("ai_gateway_scheme", mode="before")
    @classmethod
    def _scheme_in_any_case(cls, value: object) -> object:
        return value.lower() if isinstance(value, str) else value

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ProviderSettings:
        """Settings from `environ` (the process's, or what render derives from chart values; each
        field's alias names its variable); unset or empty variables keep their defaults.

        Raises SettingsError naming the variable, e.g. `AI_GATEWAY_PORT: Input should be a valid
        integer, unable to parse string as an integer`.
        """
        values = {var: value for var in ENV_VARS.values() if (value := environ.get(var, "").strip())}
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise SettingsError(first_error_message("", exc)) from None

    @property
    def ai_gateway_port(self) -> int:
        if self.ai_gateway_port_override is not None:
            return self.ai_gateway_port_override
        return 443 if self.ai_gateway_scheme == "https" else 80

    def pod_policy(self, level: Level | None = None) -> PodPolicy:
        """The policy for an Instance in a namespace enforcing `level` (None: no label there)."""
        return PodPolicy(
            level=level or self.pod_security_default,
            allow_service_account=self.pod_security_allow_service_account,
            allow_secret_references=self.pod_security_allow_secret_references,
        )

    @property
    def ai_gateway_configured(self) -> bool:
        """The chart told us which Gateway to attach routes to."""
        return bool(self.ai_gateway_name and self.ai_gateway_namespace)


# Field name -> environment variable, as the fields' aliases say (render's options, the chart map).
ENV_VARS: Final[Mapping[str, str]] = {
    name: str(field.validation_alias) for name, field in ProviderSettings.model_fields.items()
}
