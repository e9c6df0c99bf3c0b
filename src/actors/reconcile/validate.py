"""Validate, the step every pass and the validation endpoint share.

The Instance's bounds (a stub's broken bound too), its version bundle, then the provider's rules on
the Instance with its component versions resolved from that bundle: the very object Sync and Status
work on, so what the provider read while validating is handed to them and nothing is parsed twice.
The Go runtime validates the stored Instance; resolving first differs only in component versions
the user left empty, which the Provider's own bundle fills.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from actors.interface import KubeObject, Provider, ReconcileContext, ValidationFailed
from actors.reconcile.versions import effective_bundle, resolve_versions, version_problem


@dataclass(frozen=True)
class Refusal:
    """Why an Instance cannot be reconciled: a message for its status, and which check said so."""

    # OverLimit (a bound on what an Instance may cost), VersionBundleNotDefined, or ValidationFailed
    # (the provider's rules).
    reason: str
    message: str


@dataclass(frozen=True)
class Validated:
    """An Instance that passed Validate."""

    # On the Instance with its component versions resolved: what Sync and Status run on.
    ctx: ReconcileContext
    # The version bundle the Instance uses (written to status.version).
    bundle: str | None
    # What the provider read while validating, handed to its desired() and status().
    valid: Any


async def validate(
    provider: Provider[Any],
    instance: KubeObject,
    *,
    providers: Mapping[str, KubeObject],
    context: Callable[[KubeObject], ReconcileContext],
    over_limit: str | None,
) -> Validated | Refusal:
    """What the provider read, or why the Instance cannot be reconciled. `over_limit`: the bound
    the Instance broke (InstanceLimits.problem), as the store found it or /validate checked it."""
    if problem := over_limit:
        return Refusal("OverLimit", problem)
    if problem := version_problem(instance, providers):
        return Refusal("VersionBundleNotDefined", problem)
    bundle = effective_bundle(instance, providers)
    ctx = context(resolve_versions(instance, providers, bundle))
    try:
        valid = await provider.validate(ctx)
    except ValidationFailed as err:
        return Refusal("ValidationFailed", err.message)
    return Validated(ctx, bundle, valid)
