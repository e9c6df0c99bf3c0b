"""Fixtures of the chart's integration tests (the control plane's are in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.chart import prepare_chart


@pytest.fixture(scope="module")
def chart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return prepare_chart(tmp_path_factory.mktemp("chart"))
