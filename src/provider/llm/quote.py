"""Quoting user input inside validation messages."""

from __future__ import annotations

import json


def quote(value: object) -> str:
    """`value` in double quotes with quotes and control characters escaped (like Go's %q), so a
    message stays one line however odd the input: it is shown in `kubectl get` and in conditions."""
    return json.dumps(str(value), ensure_ascii=False)
