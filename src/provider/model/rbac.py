"""Every API permission the provider needs: the one list the chart's RBAC and `doctor` both use.

`provider-kserve generate` renders these rules into `charts/provider-kserve/generated/rbac-rules.yaml`
(the chart's ClusterRole and Role take them from there, nothing is written by hand), and the
runtime's `doctor` command can check the same rules with SelfSubjectAccessReviews (`access_checks`).
Adding an API call to the provider therefore means adding its verb here, regenerating, and nothing
else.

Least privilege: exactly the kinds and verbs the provider uses, no wildcards. Two scopes:

- `cluster` rules go to a ClusterRole: Instances live in any namespace, so everything the provider
  reads or derives per Instance is cluster-wide.
- `namespace` rules go to a Role in the provider's own (release) namespace: the leader-election
  Lease is the only such object.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

Scope = Literal["cluster", "namespace"]

WATCH: tuple[str, ...] = ("list", "watch")
# Owned objects: watched (inventory, drift), read once before their first apply (to refuse a name
# someone else took), applied with server-side apply (a PATCH, which needs `create` too when it
# creates the object) and deleted when no longer desired. Never `update`: nothing is PUT.
OWN: tuple[str, ...] = ("get", "list", "watch", "create", "patch", "delete")


@dataclass(frozen=True)
class Rule:
    """One RBAC PolicyRule plus the reason the provider needs it."""

    api_group: str
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    why: str
    scope: Scope = "cluster"

    def policy_rule(self) -> dict[str, Any]:
        """The rbac.authorization.k8s.io/v1 PolicyRule."""
        return {"apiGroups": [self.api_group], "resources": list(self.resources), "verbs": list(self.verbs)}


RULES: tuple[Rule, ...] = (
    # -- OpenEverest core --------------------------------------------------------------------
    Rule(
        "core.openeverest.io",
        ("instances",),
        ("list", "watch", "patch"),
        "Watch Instances; add and remove the provider label and finalizer (conditional patches).",
    ),
    Rule(
        "core.openeverest.io",
        ("instances/status",),
        ("update",),
        "Write phase, message, version, conditions and connectionSecretRef (a PUT of the status "
        "subresource, conditional on the resourceVersion read).",
    ),
    Rule(
        "core.openeverest.io",
        ("instances/finalizers",),
        ("update",),
        "Derived objects carry a controller ownerReference with blockOwnerDeletion=true, which "
        "needs update on the owner's finalizers where OwnerReferencesPermissionEnforcement is on "
        "(checked by that admission plugin, not called by the provider).",
    ),
    Rule(
        "core.openeverest.io",
        ("providers",),
        WATCH,
        "Follow our own Provider CR: version bundles, the default bundle, the published schema.",
    ),
    # -- KServe --------------------------------------------------------------------------------
    Rule(
        "serving.kserve.io",
        ("llminferenceservices", "llminferenceserviceconfigs", "inferenceservices"),
        OWN,
        "The llm topology's LLMInferenceService and inline LLMInferenceServiceConfig, the "
        "predictor topology's InferenceService.",
    ),
    # -- core/v1 -------------------------------------------------------------------------------
    Rule(
        "",
        ("serviceaccounts", "services"),
        OWN,
        "The per-Instance model-puller ServiceAccount (HF token) and the LoadBalancer/NodePort "
        "Service `<instance>-external`.",
    ),
    Rule(
        "",
        ("secrets",),
        OWN,
        "Only the connection Secret `<instance>-conn` the OpenEverest contract requires, watched "
        "(label-selected: only ours are held) so that one deleted or edited by hand is restored. "
        "RBAC cannot restrict by name prefix or label, so this is cluster-wide; the provider never "
        "writes, deletes or keeps any other Secret (docs/security.md).",
    ),
    Rule(
        "",
        ("nodes",),
        ("list",),
        "Node addresses for the connection details of NodePort Services.",
    ),
    Rule(
        "",
        ("pods",),
        WATCH,
        "The pods KServe runs for our Instances, label-selected (core.openeverest.io/provider): "
        "ready and total per component on status.components. Read only, never written.",
    ),
    Rule(
        "autoscaling",
        ("horizontalpodautoscalers",),
        WATCH,
        "The HorizontalPodAutoscalers KServe makes for our predictors, label-selected: the replicas "
        "they want and why they cannot scale, on status.components and the Autoscaling condition. "
        "Read only, never written.",
    ),
    Rule(
        "",
        ("namespaces",),
        WATCH,
        "The Pod Security level (pod-security.kubernetes.io/enforce) of each Instance's namespace, "
        "which bounds the pod settings an Instance may pass through.",
    ),
    # -- optional integrations (used only when their CRDs are installed) -----------------------
    Rule(
        "monitoring.coreos.com",
        ("podmonitors",),
        OWN,
        "The per-Instance PodMonitor `<instance>-metrics` for vLLM metrics.",
    ),
    Rule(
        "aigateway.envoyproxy.io",
        ("aigatewayroutes",),
        OWN,
        "The per-Instance AIGatewayRoute `<instance>-ai-gateway` on the shared Envoy AI Gateway.",
    ),
    Rule(
        "gateway.envoyproxy.io",
        ("backendtrafficpolicies",),
        OWN,
        "The per-Instance token quota `<instance>-token-limit`.",
    ),
    Rule(
        "gateway.networking.k8s.io",
        ("gateways",),
        WATCH,
        "The shared AI Gateway's address for connection details.",
    ),
    Rule(
        "apiextensions.k8s.io",
        ("customresourcedefinitions",),
        ("get",),
        "Which status fields the installed Instance CRD has (status.connection, the fields of "
        "status.components). Optional kinds are found through discovery, which needs no permission.",
    ),
    Rule(
        "authorization.k8s.io",
        ("selfsubjectaccessreviews",),
        ("create",),
        "`provider-kserve doctor` checks the provider's own permissions (this list).",
    ),
    Rule(
        "authentication.k8s.io",
        ("tokenreviews",),
        ("create",),
        "With metrics.protection or validation.auth rbac: whose bearer token a request carries.",
    ),
    Rule(
        "authorization.k8s.io",
        ("subjectaccessreviews",),
        ("create",),
        "With metrics.protection or validation.auth rbac: whether that user may use the endpoint.",
    ),
    Rule(
        "events.k8s.io",
        ("events",),
        ("create", "patch"),
        "Events on Instances (`kubectl describe instance`): created once, then their series' count "
        "patched as they repeat.",
    ),
    # -- the provider's own namespace ----------------------------------------------------------
    Rule(
        "coordination.k8s.io",
        ("leases",),
        ("get", "create", "update"),
        "Leader election: one active provider replica.",
        scope="namespace",
    ),
)


def policy_rules(scope: Scope, rules: tuple[Rule, ...] = RULES) -> list[dict[str, Any]]:
    return [rule.policy_rule() for rule in rules if rule.scope == scope]


@dataclass(frozen=True)
class AccessCheck:
    """One SelfSubjectAccessReview's resourceAttributes (namespace None: all namespaces)."""

    group: str
    resource: str
    subresource: str
    verb: str
    namespace: str | None

    def resource_attributes(self) -> dict[str, str]:
        attrs = {"group": self.group, "resource": self.resource, "verb": self.verb}
        if self.subresource:
            attrs["subresource"] = self.subresource
        if self.namespace:
            attrs["namespace"] = self.namespace
        return attrs

    def __str__(self) -> str:
        what = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        where = f" in {self.namespace}" if self.namespace else ""
        return f"{self.verb} {what}.{self.group or 'core'}{where}"


def access_checks(own_namespace: str, rules: tuple[Rule, ...] = RULES) -> Iterator[AccessCheck]:
    """Every (verb, resource) the rules grant, as SelfSubjectAccessReview attributes.

    Cluster rules are checked without a namespace (that is, everywhere); namespace rules in
    `own_namespace`, the namespace the provider runs in.
    """
    for rule in rules:
        namespace = own_namespace if rule.scope == "namespace" else None
        for resource in rule.resources:
            base, _, sub = resource.partition("/")
            for verb in rule.verbs:
                yield AccessCheck(rule.api_group, base, sub, verb, namespace)
