"""The predictor topology's rules across fields (provider.rules.cross_field)."""

from __future__ import annotations

from typing import Final

from provider.rules.cross_field import CrossFieldRule, CrossFieldRules

P: Final = "spec.components.predictor.parameters."

RULES: Final = CrossFieldRules(
    in_form=(
        CrossFieldRule(
            "maxReplicas at least minReplicas (validation, rule 7)",
            form_field=P + "maxReplicas",
            reads=(P + "maxReplicas", P + "minReplicas"),
            example={P + "minReplicas": 5, P + "maxReplicas": 2},
            provider_says="predictor.parameters.maxReplicas (2) must be greater than or equal to minReplicas (5)",
        ),
    ),
)
