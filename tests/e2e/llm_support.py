"""Helpers of the LLM end-to-end test that read what vLLM was told and said (the tiny model, its
Instance and the OpenAI client are dev/tinyllm's, shared with `make demo-cluster`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

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


# The line KServe's template prints once `vllm --version` has answered.
VERSION_PROBED = "[access-log-detect] vllm version="


def version_probe_seconds(timestamped_log: str, container: dict[str, Any]) -> float:
    """Seconds from the container's start to KServe's template reporting vLLM's version: the time
    `vllm --version` took (dev/vllm-cpu/fast_version.py), as the kubelet timestamped the log
    (`kubectl logs --timestamps`) and the container's status says it started (to the second)."""
    started = datetime.fromisoformat(container["state"]["running"]["startedAt"].replace("Z", "+00:00"))
    (line,) = [line for line in timestamped_log.splitlines() if VERSION_PROBED in line]
    stamp = datetime.fromisoformat(line.split(" ", 1)[0].replace("Z", "+00:00"))
    return (stamp - started).total_seconds()
