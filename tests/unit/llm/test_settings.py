"""ProviderSettings from the chart's environment."""

from __future__ import annotations

import pytest

from provider.model.settings import ProviderSettings, SettingsError


def test_defaults() -> None:
    settings = ProviderSettings.from_env({})
    assert settings == ProviderSettings()
    assert settings.hf_token_secret_name == ""
    assert settings.ai_gateway_enabled is False
    assert settings.enable_pod_monitor is True
    assert settings.pod_monitor_interval == "30s"
    assert settings.ai_gateway_port == 80
    assert settings.ai_gateway_configured is False


def test_chart_environment() -> None:
    settings = ProviderSettings.from_env(
        {
            "HF_TOKEN_SECRET_NAME": "hf-token",
            "AI_GATEWAY_ENABLED": "true",
            "AI_GATEWAY_NAME": "provider-kserve-ai-gateway",
            "AI_GATEWAY_NAMESPACE": "kserve",
            "AI_GATEWAY_SCHEME": "HTTPS",
            "AI_GATEWAY_HOSTNAME": "llm.example.com",
            "AI_GATEWAY_RATE_LIMIT_REDIS_URL": "redis.kserve:6379",
            "ENABLE_POD_MONITOR": "false",
            "POD_MONITOR_INTERVAL": "1m30s",
            "UNRELATED": "x",
        }
    )
    assert settings.hf_token_secret_name == "hf-token"
    assert settings.ai_gateway_enabled is True
    assert settings.ai_gateway_configured is True
    assert (settings.ai_gateway_scheme, settings.ai_gateway_port) == ("https", 443)
    assert settings.ai_gateway_hostname == "llm.example.com"
    assert settings.ai_gateway_rate_limit_redis_url == "redis.kserve:6379"
    assert settings.enable_pod_monitor is False
    assert settings.pod_monitor_interval == "1m30s"


def test_explicit_gateway_port() -> None:
    assert ProviderSettings.from_env({"AI_GATEWAY_PORT": "8443"}).ai_gateway_port == 8443


def test_empty_values_keep_defaults() -> None:
    assert ProviderSettings.from_env({"ENABLE_POD_MONITOR": "", "POD_MONITOR_INTERVAL": " "}) == ProviderSettings()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"AI_GATEWAY_ENABLED": "maybe"}, 'AI_GATEWAY_ENABLED: invalid boolean value "maybe" (use true or false)'),
        (
            {"AI_GATEWAY_PORT": "http"},
            "AI_GATEWAY_PORT: Input should be a valid integer, unable to parse string as an integer",
        ),
        ({"AI_GATEWAY_PORT": "70000"}, "AI_GATEWAY_PORT: Input should be less than or equal to 65535"),
        ({"AI_GATEWAY_SCHEME": "grpc"}, "AI_GATEWAY_SCHEME: Input should be 'http' or 'https'"),
        ({"POD_MONITOR_INTERVAL": "30 seconds"}, "POD_MONITOR_INTERVAL: String should match pattern"),
    ],
)
def test_invalid_values_name_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as info:
        ProviderSettings.from_env(env)
    assert str(info.value).startswith(message)
