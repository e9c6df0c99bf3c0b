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
        CrossFieldRule(
            "how to scale needs a range (validation, rule 7b)",
            form_field=P + "scaleMetric",
            reads=(P + "scaleMetric", P + "maxReplicas", P + "minReplicas"),
            example={P + "scaleMetric": "cpu", P + "minReplicas": 2, P + "maxReplicas": 2},
            provider_says=(
                "predictor.parameters.scaleMetric says how KServe's autoscaler scales, but maxReplicas (2) "
                "is not above minReplicas (2): set maxReplicas above minReplicas"
            ),
        ),
        CrossFieldRule(
            "a target needs a range (validation, rule 7b)",
            form_field=P + "scaleTarget",
            reads=(P + "scaleTarget", P + "maxReplicas", P + "minReplicas"),
            example={P + "scaleTarget": 60, P + "minReplicas": 1},
            provider_says=(
                "predictor.parameters.scaleTarget says how KServe's autoscaler scales, but maxReplicas (unset) "
                "is not above minReplicas (1): set maxReplicas above minReplicas"
            ),
        ),
        CrossFieldRule(
            "memory needs a target (validation, rule 7b)",
            form_field=P + "scaleTarget",
            reads=(P + "scaleTarget", P + "scaleMetric"),
            example={P + "scaleMetric": "memory", P + "minReplicas": 1, P + "maxReplicas": 3},
            provider_says=(
                "predictor.parameters.scaleTarget is required with scaleMetric memory: KServe has no default for it"
            ),
        ),
    ),
)
