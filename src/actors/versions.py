"""Version bundles: the OpenEverest runtime's check of `spec.version` and the resolved Instance.

Pure functions of the Instance and the Provider resources the runtime follows.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from actors.interface import KubeObject


def provider_spec(instance: KubeObject, providers: Mapping[str, KubeObject]) -> dict[str, Any] | None:
    name = (instance.get("spec") or {}).get("providerRef", {}).get("name", "")
    provider = providers.get(name)
    return provider.get("spec") if provider else None


def version_problem(instance: KubeObject, providers: Mapping[str, KubeObject]) -> str | None:
    """The Go runtime's version-bundle check, with its exact message."""
    spec = instance.get("spec") or {}
    wanted = spec.get("version")
    if not wanted:
        return None
    names = [v.get("name") for v in (provider_spec(instance, providers) or {}).get("versions") or []]
    if wanted not in names:
        return f'version "{wanted}" is not defined by provider "{spec.get("providerRef", {}).get("name", "")}"'
    return None


def bundle_name(instance: KubeObject, providers: Mapping[str, KubeObject]) -> str | None:
    """`spec.version`, else the bundle recorded in status, else the Provider's default bundle."""
    spec = provider_spec(instance, providers) or {}
    explicit = instance["spec"].get("version") or (instance.get("status") or {}).get("version")
    if explicit:
        return str(explicit)
    default = next((v for v in spec.get("versions") or [] if v.get("default")), None)
    return str(default["name"]) if default else None


def resolve_versions(instance: KubeObject, bundle: str | None, providers: Mapping[str, KubeObject]) -> KubeObject:
    """A copy with empty component versions filled from the bundle (the given Instance untouched)."""
    resolved = copy.deepcopy(instance)
    if not bundle:
        return resolved
    spec = provider_spec(instance, providers) or {}
    entry = next((v for v in spec.get("versions") or [] if v.get("name") == bundle), None)
    for name, version in ((entry or {}).get("components") or {}).items():
        component = (resolved["spec"].get("components") or {}).get(name)
        if isinstance(component, dict) and not component.get("version"):
            component["version"] = version
    return resolved
