"""The unit tests' settings: the fuzz profile this run uses (tests.support.fuzz_profiles)."""

from __future__ import annotations

from tests.support.fuzz_profiles import register_and_load

register_and_load()
