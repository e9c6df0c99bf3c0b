"""Helpers of the LLM end-to-end test that read what vLLM was told and said (the tiny model, its
Instance and the OpenAI client are dev/tinyllm's, shared with `make demo-cluster`)."""

from __future__ import annotations

from typing import Final

import yaml

from tests.e2e.support import CHART

CHART_VALUES: Final = CHART / "values.yaml"


def cpu_profile_default_args() -> list[str]:
    """The chart's cpuProfile.defaultArgs, which the test leaves as they are."""
    args: list[str] = yaml.safe_load(CHART_VALUES.read_text())["cpuProfile"]["defaultArgs"]
    return args


def as_logged_by_vllm(arg: str) -> str:
    """How vLLM's startup line `non-default args: {...}` (a Python dict) shows a command-line
    argument: `--max-model-len=2048` as `'max_model_len': 2048`, `--dtype=float32` as
    `'dtype': 'float32'`, a flag as `'enforce_eager': True`."""
    name, sep, value = arg.removeprefix("--").partition("=")
    key = name.replace("-", "_")
    if not sep:
        return f"'{key}': True"
    for number in (int, float):
        try:
            return f"'{key}': {number(value)!r}"
        except ValueError:
            pass
    return f"'{key}': {value!r}"


def words(text: str) -> list[str]:
    """The words of an answer: the tiny model's tokens are words, and vLLM puts a space before each
    (transformers' decode has none before the first)."""
    return text.split()
