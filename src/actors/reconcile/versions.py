"""Version bundles (`Provider.spec.versions`): the OpenEverest runtime's check and resolution.

Pure functions of an Instance and the Provider resources by name, shared by the reconciler, the
validation endpoint and `provider-kserve render` (which builds the Provider from the definition
offline), so the three agree by construction.

- `version_problem`: `spec.version`, when set, must name a bundle, with the Go runtime's message
  `version "<v>" is not defined by provider "<name>"`. Beyond the Go runtime: a `status.version`
  frozen earlier that the Provider no longer defines is reported (Go returned an error every pass
  without saying so on the Instance), and a non-string version (`version: 0.20` in YAML is the
  number 0.2) says so instead of "0.2 is not defined".
- `effective_bundle`: `spec.version`, else the frozen `status.version`, else the Provider's
  `default: true` bundle; the runtime writes it to `status.version`.
- `resolve_versions`: a copy with each component's empty `version` filled from the bundle.

A missing Provider is not the user's doing: the problem names it (as Go's "fetching provider for
version validation" error did) and `awaiting_provider` tells the reconciler to retry.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from actors.client.known_resources import PROVIDERS
from actors.client.resource import KubeObject
from actors.contract import field_of, provider_name


def provider_spec(instance: KubeObject, providers: Mapping[str, KubeObject]) -> dict[str, Any] | None:
    """The spec of the Provider the Instance names, None while that Provider is not known."""
    provider = providers.get(provider_name(instance))
    if provider is None:
        return None
    spec: dict[str, Any] = provider.get("spec") or {}
    return spec


def bundle_names(spec: Mapping[str, Any] | None) -> list[str]:
    return [str(v.get("name")) for v in (spec or {}).get("versions") or [] if isinstance(v, dict)]


def awaiting_provider(instance: KubeObject, providers: Mapping[str, KubeObject]) -> bool:
    """The version check cannot be made yet: the Instance asks for a bundle of an unknown Provider."""
    return bool(field_of(field_of(instance, "spec"), "version")) and provider_spec(instance, providers) is None


def version_problem(instance: KubeObject, providers: Mapping[str, KubeObject]) -> str | None:
    """Why the Instance's version bundle cannot be used, or None."""
    wanted = field_of(field_of(instance, "spec"), "version")
    name = provider_name(instance)
    spec = provider_spec(instance, providers)
    if wanted not in (None, ""):
        if not isinstance(wanted, str):
            return (
                f"spec.version must be a string, not {wanted!r}: quote it in YAML, where an unquoted "
                "version such as 1.10 is the number 1.1"
            )
        if spec is None:
            return f'fetching provider for version validation: {PROVIDERS.plural}.{PROVIDERS.group} "{name}" not found'
        if wanted not in bundle_names(spec):
            return f'version "{wanted}" is not defined by provider "{name}"'
        return None
    frozen = field_of(field_of(instance, "status"), "version")
    if frozen and spec is not None and frozen not in bundle_names(spec):
        return (
            f'version bundle "{frozen}" not found in provider spec (status.version, frozen when the Instance '
            f"was created); set spec.version to one of: {', '.join(bundle_names(spec)) or '(none defined)'}"
        )
    return None


def effective_bundle(instance: KubeObject, providers: Mapping[str, KubeObject]) -> str | None:
    explicit = field_of(field_of(instance, "spec"), "version") or field_of(field_of(instance, "status"), "version")
    if explicit:
        return str(explicit)
    spec = provider_spec(instance, providers) or {}
    default = next((v for v in spec.get("versions") or [] if isinstance(v, dict) and v.get("default")), None)
    return str(default["name"]) if default else None


def resolve_versions(instance: KubeObject, providers: Mapping[str, KubeObject], bundle: str | None) -> KubeObject:
    """A copy with empty component versions filled from `bundle` (the stored object is untouched)."""
    resolved = copy.deepcopy(instance)
    if not bundle:
        return resolved
    spec = provider_spec(instance, providers) or {}
    entry = next((v for v in spec.get("versions") or [] if isinstance(v, dict) and v.get("name") == bundle), None)
    for name, version in ((entry or {}).get("components") or {}).items():
        component = field_of(field_of(field_of(resolved, "spec"), "components"), name)
        if isinstance(component, dict) and not component.get("version"):
            component["version"] = version
    return resolved
