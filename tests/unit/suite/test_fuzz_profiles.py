"""tests.support.fuzz_profiles: CI runs the full fuzz, the quick loop a short one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import settings

from tests.support.fuzz_profiles import register_and_load, validation_fuzz_examples


@pytest.fixture(autouse=True)
def profile_restored() -> Iterator[None]:
    loaded = settings.get_current_profile_name()
    yield
    settings.load_profile(loaded)


@pytest.mark.parametrize(
    ("environment", "profile", "hypothesis_examples", "validation_examples"),
    [
        ({"CI": "true"}, "ci", 1_000, 10_000),
        ({}, "dev", 100, 1_000),
        ({"CI": "true", "HYPOTHESIS_PROFILE": "dev"}, "dev", 100, 1_000),
    ],
    ids=["CI", "no CI", "HYPOTHESIS_PROFILE over CI"],
)
def test_the_profile_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch,
    environment: dict[str, str],
    profile: str,
    hypothesis_examples: int,
    validation_examples: int,
) -> None:
    for name in ("CI", "HYPOTHESIS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert register_and_load() == profile
    assert settings().max_examples == hypothesis_examples
    assert validation_fuzz_examples() == validation_examples
