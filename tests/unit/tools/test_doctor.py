"""`provider.doctor.cluster_checks`: the pure part, from API answers to table rows and exit code.

The calls themselves (`diagnose`) run against the real control plane in
tests/integration/chart/test_doctor.py.
"""

from __future__ import annotations

from typing import Any

from actors.client.known_resources import INSTANCES, PROVIDERS
from provider.doctor.cluster_checks import (
    CLUSTER_SCOPED,
    Row,
    Status,
    crd_rows,
    exit_code,
    format_table,
    optional_kinds,
    permission_row,
    review_body,
    scoped_checks,
    summary,
)
from provider.kserve import KServeProvider
from provider.model import kinds
from provider.model.kinds import GATEWAYS, INFERENCE_SERVICE
from provider.model.rbac import RULES, AccessCheck, Rule, access_checks
from provider.model.settings import ProviderSettings

OWNED = KServeProvider(ProviderSettings()).owned_resources()
CORE = {INSTANCES.api_version: {"instances", "providers"}}
INSTANCE_RULE = RULES[0]


def allowed(flag: bool, **extra: Any) -> dict[str, Any]:
    return {"status": {"allowed": flag, **extra}}


def test_optional_kinds_are_the_integration_kinds_the_provider_owns_plus_the_gateway_it_reads() -> None:
    optional = optional_kinds(OWNED)
    assert set(optional) == {
        kinds.LLM_INFERENCE_SERVICE,
        kinds.LLM_INFERENCE_SERVICE_CONFIG,
        INFERENCE_SERVICE,
        kinds.POD_MONITOR,
        kinds.AI_GATEWAY_ROUTE,
        kinds.BACKEND_TRAFFIC_POLICY,
        GATEWAYS,
    }
    assert len(optional) == len(set(optional))
    # Core kinds (ServiceAccount, Service) are always served: never listed as optional.
    assert kinds.SERVICE not in optional and kinds.SERVICE_ACCOUNT not in optional


def test_required_crds_missing_fail_and_absent_optional_kinds_do_not() -> None:
    served = {kinds.POD_MONITOR.api_version: {"podmonitors"}}
    rows = crd_rows(served, [kinds.POD_MONITOR, kinds.AI_GATEWAY_ROUTE])
    by_resource = {row.resource: row for row in rows}
    instances = by_resource["instances.core.openeverest.io/v1alpha1"]
    assert (instances.status, instances.failed) == (Status.MISSING, True)
    assert "core.openeverest.io" in instances.detail
    monitors = by_resource["podmonitors.monitoring.coreos.com/v1"]
    assert (monitors.status, monitors.failed, monitors.detail) == (Status.PRESENT, False, "Prometheus Operator")
    routes = by_resource["aigatewayroutes.aigateway.envoyproxy.io/v1beta1"]
    assert (routes.status, routes.failed) == (Status.ABSENT, False)
    assert "Envoy AI Gateway" in routes.detail and "AIGatewayRoute" in routes.detail
    assert exit_code(rows) == 1
    assert exit_code(crd_rows(CORE, [kinds.AI_GATEWAY_ROUTE])) == 0


def test_review_body_is_a_self_subject_access_review_of_the_exact_attributes() -> None:
    check = AccessCheck("core.openeverest.io", "instances", "status", "patch", "models")
    assert review_body(check) == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {
            "resourceAttributes": {
                "group": "core.openeverest.io",
                "resource": "instances",
                "subresource": "status",
                "verb": "patch",
                "namespace": "models",
            }
        },
    }


def test_every_verb_and_resource_of_the_rbac_rules_is_checked_exactly_once() -> None:
    checks = scoped_checks("provider-ns", ())
    assert [c for c, _ in checks] == list(access_checks("provider-ns"))
    granted = {(r.api_group, res, verb) for r in RULES for res in r.resources for verb in r.verbs}
    checked = {(c.group, f"{c.resource}/{c.subresource}" if c.subresource else c.resource, c.verb) for c, _ in checks}
    assert checked == granted
    lease = [c for c, rule in checks if rule.scope == "namespace"]
    assert lease and all(c.namespace == "provider-ns" for c in lease)


def test_watched_namespaces_scope_namespaced_checks_but_not_cluster_scoped_ones() -> None:
    checks = scoped_checks("provider-ns", ("a", "b"))
    watch_instances = [
        c.namespace for c, _ in checks if (c.resource, c.subresource, c.verb) == ("instances", "", "watch")
    ]
    assert watch_instances == ["a", "b"]
    for check, rule in checks:
        if (check.group, check.resource) in CLUSTER_SCOPED:
            assert check.namespace is None, check
        elif rule.scope == "namespace":
            assert check.namespace == "provider-ns"
        else:
            assert check.namespace in ("a", "b")
    cluster_wide = {c.resource for c, _ in checks if c.namespace is None}
    assert cluster_wide == {
        "providers",
        "nodes",
        "namespaces",
        "customresourcedefinitions",
        "selfsubjectaccessreviews",
        "tokenreviews",
        "subjectaccessreviews",
    }


def test_permission_rows_name_verb_resource_scope_and_why() -> None:
    check = AccessCheck("core.openeverest.io", "instances", "status", "update", None)
    rule = Rule("core.openeverest.io", ("instances/status",), ("update",), "Write the status.")
    ok = permission_row(check, rule, allowed(True))
    assert (ok.status, ok.verb, ok.resource, ok.detail) == (
        Status.OK,
        "update",
        "instances/status.core.openeverest.io",
        "all namespaces",
    )
    missing = permission_row(check, rule, allowed(False, reason="no RBAC policy matched"))
    assert (missing.status, missing.failed) == (Status.MISSING, True)
    assert missing.detail == "all namespaces: Write the status. (no RBAC policy matched)"
    core = permission_row(AccessCheck("", "nodes", "", "list", None), rule, allowed(False))
    assert (core.resource, core.detail) == ("nodes", "cluster-scoped: Write the status.")
    # An answer without status (a malformed review) is not taken as a grant.
    assert permission_row(check, rule, {}).status == Status.MISSING


def test_summary_and_exit_code() -> None:
    rows = [
        Row("api-server", Status.OK, "https://k8s"),
        Row("optional", Status.ABSENT, "podmonitors.monitoring.coreos.com/v1", required=False),
        Row("permission", Status.OK, "nodes", verb="get"),
    ]
    assert exit_code(rows) == 0
    assert (
        summary(rows) == "all 2 required checks ok; optional kinds not installed: podmonitors.monitoring.coreos.com/v1"
    )
    rows.append(Row("permission", Status.ERROR, "nodes", "500 boom", verb="list"))
    assert exit_code(rows) == 1
    assert summary(rows).startswith("1 of 3 required checks failed")


def test_table_has_a_header_aligned_columns_and_the_summary() -> None:
    rows = [
        Row("api-server", Status.OK, "https://k8s", "v1.34.4"),
        Row("permission", Status.MISSING, "instances.core.openeverest.io", "all namespaces: why", verb="watch"),
    ]
    lines = format_table(rows).splitlines()
    assert lines[0].split() == ["CHECK", "STATUS", "VERB", "RESOURCE", "DETAIL"]
    assert lines[1].split() == ["api-server", "ok", "-", "https://k8s", "v1.34.4"]
    assert lines[2].split()[:4] == ["permission", "missing", "watch", "instances.core.openeverest.io"]
    column = lines[0].index("RESOURCE")
    assert lines[1][column:].startswith("https://k8s") and lines[2][column:].startswith("instances.")
    assert lines[-1] == "1 of 2 required checks failed"


def test_instance_rule_is_checked_per_verb() -> None:
    # The first rule is the Instance rule; each of its verbs is one review.
    verbs = [c.verb for c, rule in scoped_checks("ns", ()) if rule is INSTANCE_RULE]
    assert verbs == list(INSTANCE_RULE.verbs)
    assert PROVIDERS.plural in {c.resource for c, _ in scoped_checks("ns", ())}
