"""Rules the provider enforces across fields of an Instance, declared so that the form can be held to
them.

OpenEverest's form checks one field at a time, plus the CEL rules (`celExpressions`) a topology's
uiSchema gives a field. A rule across fields that only the provider knows lets the form post what
the provider then refuses: a Failed Instance from a form that said nothing. Each topology declares
its rules (`config.crossFieldRules` in its topology.yaml names the tuple): the ones the form can
express, where the form carries each and an example both refuse; and the ones it cannot, with why.
`provider-kserve generate --check` fails when a declared rule has no CEL rule on its form field that
reads every field the rule reads (provider.generate.definition_ui_check); the form-model test
(tests/unit/tools/test_ui_form.py) posts every example and checks that the form and the provider
both refuse it, in the provider's words. A new rule across fields in a topology's validation goes
here with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CrossFieldRule:
    name: str  # what the rule says, briefly
    form_field: str  # the form path whose celExpressions carry the rule
    reads: tuple[str, ...]  # every form path the rule reads (its CEL rule must mention each)
    example: Mapping[str, Any] = field(default_factory=dict)  # form values both refuse
    provider_says: str = ""  # part of the provider's message for the example


@dataclass(frozen=True)
class FormLessRule:
    """A rule across fields the form cannot express: the provider alone refuses, after the POST."""

    name: str
    why: str


@dataclass(frozen=True)
class CrossFieldRules:
    in_form: tuple[CrossFieldRule, ...] = ()
    form_less: tuple[FormLessRule, ...] = ()
