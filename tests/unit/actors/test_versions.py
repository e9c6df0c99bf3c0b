"""actors.reconcile.versions: the version-bundle check and resolution the reconciler, the validation endpoint
and `render` share."""

from __future__ import annotations

from typing import Any

import pytest

from actors.interface import KubeObject
from actors.reconcile.versions import awaiting_provider, effective_bundle, resolve_versions, version_problem
from tests.support.instances import bare_instance

PROVIDERS: dict[str, KubeObject] = {
    "p": {
        "spec": {
            "versions": [
                {"name": "1.0", "components": {"engine": "1.0.3", "proxy": "2.1"}},
                {"name": "1.1", "default": True, "components": {"engine": "1.1.0"}},
            ]
        }
    }
}


def instance(version: Any = None, *, status_version: str | None = None, **components: Any) -> KubeObject:
    obj = bare_instance("i", "n", provider="p", components=components or {"engine": {}})
    if version is not None:
        obj["spec"]["version"] = version  # any JSON, not only a string: what the check is about
    if status_version is not None:
        obj["status"] = {"version": status_version}
    return obj


@pytest.mark.parametrize("version", [None, "", "1.0", "1.1"])
def test_defined_or_unset_versions_pass(version: str | None) -> None:
    assert version_problem(instance(version), PROVIDERS) is None


def test_undefined_version_has_the_openeverest_runtime_message() -> None:
    assert version_problem(instance("9.9"), PROVIDERS) == 'version "9.9" is not defined by provider "p"'


def test_a_number_is_not_a_version() -> None:
    """`version: 1.10` in YAML is the number 1.1: say so rather than "1.1 is not defined"."""
    assert version_problem(instance(1.1), PROVIDERS) == (
        "spec.version must be a string, not 1.1: quote it in YAML, where an unquoted version such as 1.10 "
        "is the number 1.1"
    )


def test_unknown_provider_is_awaited_not_blamed_on_the_user() -> None:
    assert version_problem(instance("1.0"), {}) == (
        'fetching provider for version validation: providers.core.openeverest.io "p" not found'
    )
    assert awaiting_provider(instance("1.0"), {})
    assert not awaiting_provider(instance("1.0"), PROVIDERS)
    # Without an explicit version there is nothing to check yet.
    assert version_problem(instance(), {}) is None
    assert not awaiting_provider(instance(), {})


def test_a_frozen_bundle_the_provider_dropped_is_reported() -> None:
    problem = version_problem(instance(status_version="0.9"), PROVIDERS)
    assert problem == (
        'version bundle "0.9" not found in provider spec (status.version, frozen when the Instance was '
        "created); set spec.version to one of: 1.0, 1.1"
    )
    # An explicit spec.version takes precedence over the frozen one.
    assert version_problem(instance("1.0", status_version="0.9"), PROVIDERS) is None


@pytest.mark.parametrize(
    ("obj", "bundle"),
    [
        (instance("1.0"), "1.0"),
        (instance(status_version="1.0"), "1.0"),
        (instance("1.1", status_version="1.0"), "1.1"),
        (instance(), "1.1"),
    ],
)
def test_effective_bundle_order(obj: KubeObject, bundle: str) -> None:
    assert effective_bundle(obj, PROVIDERS) == bundle


def test_no_bundle_without_provider_or_default() -> None:
    assert effective_bundle(instance(), {}) is None
    assert effective_bundle(instance(), {"p": {"spec": {"versions": [{"name": "1.0"}]}}}) is None


def test_resolution_fills_only_empty_versions_of_present_components_on_a_copy() -> None:
    obj = instance(engine={"version": ""}, sidecar={})
    resolved = resolve_versions(obj, PROVIDERS, "1.0")
    assert resolved["spec"]["components"] == {"engine": {"version": "1.0.3"}, "sidecar": {}}
    assert obj["spec"]["components"] == {"engine": {"version": ""}, "sidecar": {}}
    pinned = resolve_versions(instance(engine={"version": "0.1"}), PROVIDERS, "1.0")
    assert pinned["spec"]["components"]["engine"] == {"version": "0.1"}
    assert resolve_versions(obj, PROVIDERS, None) == obj
