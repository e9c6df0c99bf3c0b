"""The limits of the Kubernetes fields an Instance's values are written into.

The API server checks them too, but only when the derived object is applied: the Instance would
then fail far from the field the user wrote, with a raw 422, on every retry. Checked at validation
time instead, each with a message naming the field and the limit.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from actors import ValidationFailed
from provider.rules.quote import quote

INT32_MAX: Final = 2**31 - 1
# A label value (the Instance name is the value of app.kubernetes.io/instance on every object).
LABEL_VALUE_MAX: Final = 63
# A DNS-1035 label: the name of the LLMInferenceService/InferenceService, which KServe turns into
# Service and Deployment names.
DNS1035_LABEL: Final = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED_NAME: Final = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# The image reference grammar of distribution/reference (domain, path, tag, digest).
_IMAGE: Final = re.compile(
    r"^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*"
    r"(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[\w][\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$"
)
IMAGE_MAX: Final = 4096
URI_MAX: Final = 2048  # storage and model URIs
# Unicode categories that must not reach a name, an argument or a message: control characters,
# format characters (the bidirectional overrides among them) and line/paragraph separators.
_UNPRINTABLE: Final = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def unprintable(value: str) -> str | None:
    """The first character of `value` that is not printable, escaped (e.g. `\\n`, `\\u202e`)."""
    for ch in value:
        if unicodedata.category(ch) in _UNPRINTABLE:
            return repr(ch)[1:-1] if ch.isascii() else f"\\u{ord(ch):04x}"
    return None


def check_length(value: str, where: str, max_length: int) -> None:
    if len(value) > max_length:
        raise ValidationFailed(f"{where} is {len(value)} characters long; at most {max_length} are allowed")


def check_text(value: str, where: str, *, max_length: int | None = None) -> None:
    """Printable, and at most `max_length` characters."""
    bad = unprintable(value)
    if bad is not None:
        raise ValidationFailed(f"{where} contains the unprintable character {bad}")
    if max_length is not None:
        check_length(value, where, max_length)


def check_int32(value: int | None, where: str) -> None:
    if value is not None and value > INT32_MAX:
        raise ValidationFailed(f"{where} is {value}; at most {INT32_MAX} (a 32-bit integer) is allowed")


def check_object_name(name: str, where: str) -> None:
    """A name that is a label value and a DNS-1035 label, as KServe's objects need."""
    check_text(name, where)
    if len(name) > LABEL_VALUE_MAX:
        raise ValidationFailed(
            f"{where} is {len(name)} characters long; at most {LABEL_VALUE_MAX} are allowed (it becomes the "
            "name of the KServe object and the app.kubernetes.io/instance label of every derived object)"
        )
    if not DNS1035_LABEL.fullmatch(name):
        raise ValidationFailed(
            f"{where} {quote(name)} is not a valid name for the KServe object (lowercase letters, digits and "
            "'-', starting with a letter)"
        )


def check_qualified_name(key: str, where: str) -> None:
    """A label, annotation or resource key: an optional DNS subdomain prefix and `/`, then a name of
    at most 63 characters."""
    prefix, slash, name = key.rpartition("/")
    problem = None
    if slash and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix)):
        problem = "its prefix must be a lowercase DNS subdomain"
    elif not name or len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        problem = "the name part must be 1-63 letters, digits, '-', '_' or '.', starting and ending alphanumeric"
    if problem is not None:
        raise ValidationFailed(f"{where} has the invalid key {quote(key)}: {problem}")


def check_image(image: str, where: str) -> None:
    check_text(image, where, max_length=IMAGE_MAX)
    if not _IMAGE.fullmatch(image):
        raise ValidationFailed(f"{where} {quote(image)} is not a valid image reference (e.g. repo/name:tag)")
