"""Model and adapter URIs: the storage schemes KServe's storage initializer and vLLM can load.

The Go provider ran these through Go's `net/url`, which accepts nearly anything (kserve-behavior
§10.20), so a typo such as `hf:/org/model` only failed inside the storage initializer. Checking the
scheme here puts the problem on the Instance, naming the field.
"""

from __future__ import annotations

from typing import Final

from provider.rules.fields import URI_MAX
from provider.rules.quote import quote

SCHEMES: Final[tuple[str, ...]] = ("hf", "s3", "gs", "pvc", "oci")
_SCHEME_LIST: Final = ", ".join(f"{s}://" for s in SCHEMES)


def uri_problem(uri: str) -> str | None:
    """Why `uri` cannot be loaded, or None when it has a supported scheme and a location."""
    if len(uri) > URI_MAX:
        return f"is {len(uri)} characters long; at most {URI_MAX} are allowed"
    if any(ch.isspace() for ch in uri):
        return "must not contain whitespace"
    if not uri.isprintable():
        return "must not contain unprintable characters"
    scheme, sep, location = uri.partition("://")
    if not sep:
        return f"missing scheme (use one of {_SCHEME_LIST})"
    if scheme not in SCHEMES:
        return f"unsupported scheme {quote(scheme)} (use one of {_SCHEME_LIST})"
    if not location.strip("/"):
        return f'nothing after "{scheme}://"'
    return None


def scheme_of(uri: str) -> str:
    scheme, sep, _ = uri.partition("://")
    return scheme if sep else ""
