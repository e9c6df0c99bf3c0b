"""How much the fuzz tests do: the full run in CI, a short one in the quick unit loop.

Two hypothesis settings profiles, registered and loaded by tests/unit/conftest.py: `ci` when the
CI environment variable is set (`.ci/run` exports CI=true), `dev` otherwise; HYPOTHESIS_PROFILE
names one explicitly. They set hypothesis's own example count (the property tests, e.g.
provider.rules.quantity's), and the profile's name sets the seeded validation fuzz's
(tests/unit/security/test_fuzz_validation.py, which draws from tests.support.gen, not hypothesis).
"""

from __future__ import annotations

import os
from typing import Final

from hypothesis import HealthCheck, settings

CI: Final = "ci"
DEV: Final = "dev"
# Seeded Instance specs through check and render, per profile.
VALIDATION_FUZZ_EXAMPLES: Final = {CI: 10_000, DEV: 1_000}


def register_and_load() -> str:
    """Register both profiles and load the one this run asks for; its name."""
    # CI: ten times hypothesis's default, and no deadline (a shared runner's pauses are not bugs).
    settings.register_profile(CI, max_examples=1_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    # The quick loop: hypothesis's default.
    settings.register_profile(DEV, max_examples=100)
    name = os.environ.get("HYPOTHESIS_PROFILE") or (CI if os.environ.get("CI") else DEV)
    settings.load_profile(name)
    return name


def validation_fuzz_examples() -> int:
    """How many seeded specs the validation fuzz runs under the loaded profile."""
    return VALIDATION_FUZZ_EXAMPLES[settings.get_current_profile_name()]
