"""Quoting user input inside validation messages."""

from __future__ import annotations

import json

# Longer input is shown cut: a message echoes a value to point at it, not to copy it back.
QUOTED_MAX = 200


def quote(value: object) -> str:
    """`value` in double quotes with quotes and control characters escaped (like Go's %q), so a
    message stays one line however odd the input: it is shown in `kubectl get` and in conditions.
    Bidirectional overrides are escaped too, and a value over QUOTED_MAX characters is cut."""
    text = str(value)
    if len(text) > QUOTED_MAX:
        text = text[:QUOTED_MAX] + f"…({len(text)} characters)"
    return json.dumps(text, ensure_ascii=False).translate(_BIDI_ESCAPES)


# U+202A-U+202E and U+2066-U+2069 reorder the text around them on screen.
_BIDI_ESCAPES = {cp: f"\\u{cp:04x}" for cp in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}
