"""`provider-kserve doctor`: can the provider run against this cluster, with these credentials?

Four groups of checks, each a row of one table, and nothing is created on the way:

- the API server answers (`GET /version`);
- the CRDs the provider cannot run without (Instance, Provider) are served, read from discovery,
  which every authenticated user may read, so the check works before any RBAC is granted;
- which optional kinds are served (KServe's LLMInferenceService and InferenceService, Envoy AI
  Gateway, Prometheus Operator), reported and never failing: the provider skips an absent kind;
- every permission in `provider.model.rbac`, the rules the chart's ClusterRole and Role are generated
  from, one SelfSubjectAccessReview per verb and resource. A review is answered and never stored.

The checks are pure functions of what the API server answered (`crd_rows`, `permission_row`,
`format_table`, `exit_code`); `diagnose` only makes the calls.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

import anyio

from actors import CRDS, INSTANCES, PROVIDERS, ApiError, KubeClient, KubeObject, Resource, TransportError
from provider.model.kinds import GATEWAYS, NAMESPACES, NODE
from provider.model.rbac import RULES, AccessCheck, Rule, access_checks

SSAR_PATH: Final = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
# At most this many reviews in flight: ~90 small POSTs, answered from the authorizer's cache.
CONCURRENT_REVIEWS: Final = 16

REQUIRED_KINDS: Final[tuple[Resource, ...]] = (INSTANCES, PROVIDERS)
# The optional kinds by the integration that brings them.
INTEGRATIONS: Final[Mapping[str, str]] = {
    "serving.kserve.io": "KServe",
    "aigateway.envoyproxy.io": "Envoy AI Gateway",
    "gateway.envoyproxy.io": "Envoy Gateway (AI Gateway token quotas)",
    "gateway.networking.k8s.io": "Gateway API (AI Gateway address)",
    "monitoring.coreos.com": "Prometheus Operator",
}
# Cluster-scoped resources among the rules: checked cluster-wide even when namespaces are given.
CLUSTER_SCOPED: Final = frozenset(
    {(r.group, r.plural) for r in (PROVIDERS, CRDS, NODE, NAMESPACES)}
    | {
        ("authorization.k8s.io", "selfsubjectaccessreviews"),
        ("authorization.k8s.io", "subjectaccessreviews"),
        ("authentication.k8s.io", "tokenreviews"),
    }
)


class Status(StrEnum):
    OK = "ok"
    MISSING = "missing"
    PRESENT = "present"
    ABSENT = "absent"
    ERROR = "error"


@dataclass(frozen=True)
class Row:
    """One line of the report. `verb` is empty except for permissions."""

    check: str  # api-server | crd | optional | permission
    status: Status
    resource: str
    detail: str = ""
    verb: str = ""
    required: bool = True

    @property
    def failed(self) -> bool:
        return self.required and self.status in (Status.MISSING, Status.ERROR)


# -- pure: from answers to rows ---------------------------------------------------------------------


def resource_name(res: Resource) -> str:
    """`llminferenceservices.serving.kserve.io/v1alpha2`, as `kubectl api-resources` spells it."""
    return f"{res.plural}.{res.group or 'core'}/{res.version}"


def optional_kinds(owned: Iterable[Resource]) -> list[Resource]:
    """The provider's kinds that come from an integration (not core/v1), plus the Gateway it reads."""
    kinds = [r for r in owned if r.group in INTEGRATIONS]
    return [*dict.fromkeys([*kinds, GATEWAYS])]


def crd_rows(served: Mapping[str, set[str]], optional: Sequence[Resource]) -> list[Row]:
    """Rows for the required and optional kinds, given discovery's plurals per group/version."""
    rows: list[Row] = []
    for res in REQUIRED_KINDS:
        here = res.plural in served.get(res.api_version, set())
        detail = "" if here else "install the OpenEverest core CRDs (core.openeverest.io)"
        rows.append(Row("crd", Status.OK if here else Status.MISSING, resource_name(res), detail))
    for res in optional:
        here = res.plural in served.get(res.api_version, set())
        what = INTEGRATIONS.get(res.group, res.group)
        detail = what if here else f"{what}: not installed, the provider skips {res.kind} objects"
        rows.append(
            Row("optional", Status.PRESENT if here else Status.ABSENT, resource_name(res), detail, required=False)
        )
    return rows


def review_body(check: AccessCheck) -> KubeObject:
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": check.resource_attributes()},
    }


def scoped_checks(
    own_namespace: str, namespaces: Sequence[str], rules: Sequence[Rule] = RULES
) -> list[tuple[AccessCheck, Rule]]:
    """Every (verb, resource) of the rules, paired with its rule, as the provider will use it.

    Cluster rules: across all namespaces (a review without a namespace) or, when the provider
    watches only `namespaces`, in each of those; cluster-scoped resources always cluster-wide.
    Namespace rules (the leader-election Lease): in `own_namespace`, where the provider runs."""
    out: list[tuple[AccessCheck, Rule]] = []
    for rule in rules:
        for check in access_checks(own_namespace, (rule,)):
            if rule.scope == "cluster" and namespaces and (check.group, check.resource) not in CLUSTER_SCOPED:
                out.extend((dataclasses.replace(check, namespace=ns), rule) for ns in namespaces)
            else:
                out.append((check, rule))
    return out


def permission_row(check: AccessCheck, rule: Rule, review: KubeObject) -> Row:
    """The row for one SelfSubjectAccessReview answer."""
    status = review.get("status") or {}
    resource = f"{check.resource}/{check.subresource}" if check.subresource else check.resource
    resource = f"{resource}.{check.group}" if check.group else resource
    if (check.group, check.resource) in CLUSTER_SCOPED:
        where = "cluster-scoped"
    else:
        where = f"namespace {check.namespace}" if check.namespace else "all namespaces"
    if status.get("allowed"):
        return Row("permission", Status.OK, resource, where, verb=check.verb)
    reason = str(status.get("evaluationError") or status.get("reason") or "").strip()
    detail = f"{where}: {rule.why}" + (f" ({reason})" if reason else "")
    return Row("permission", Status.MISSING, resource, detail, verb=check.verb)


def exit_code(rows: Iterable[Row]) -> int:
    return 1 if any(row.failed for row in rows) else 0


def summary(rows: Sequence[Row]) -> str:
    failed = [r for r in rows if r.failed]
    required = [r for r in rows if r.required]
    absent = [r.resource for r in rows if r.status == Status.ABSENT]
    text = (
        f"{len(failed)} of {len(required)} required checks failed"
        if failed
        else f"all {len(required)} required checks ok"
    )
    if absent:
        text += f"; optional kinds not installed: {', '.join(absent)}"
    return text


def format_table(rows: Sequence[Row]) -> str:
    """A fixed-width table with a header, then the summary line."""
    header = ("CHECK", "STATUS", "VERB", "RESOURCE", "DETAIL")
    cells = [header] + [(r.check, str(r.status), r.verb or "-", r.resource, r.detail) for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header) - 1)]
    lines = [
        "  ".join([*(c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)), row[-1]]).rstrip() for row in cells
    ]
    return "\n".join([*lines, "", summary(rows)]) + "\n"


# -- thin: the calls ---------------------------------------------------------------------------------


async def _api_server(client: KubeClient) -> Row:
    where = str(client.configuration.host)
    try:
        version = await client.request("GET", "/version", resource="version")
    except ApiError as err:
        return Row("api-server", Status.ERROR, where, str(err))
    except (TransportError, ValueError) as err:
        return Row("api-server", Status.ERROR, where, f"unreachable: {err or type(err).__name__}")
    return Row("api-server", Status.OK, where, str(version.get("gitVersion", "")))


async def _served(client: KubeClient, group_versions: Iterable[str]) -> tuple[dict[str, set[str]], list[Row]]:
    served: dict[str, set[str]] = {}
    errors: list[Row] = []
    for group_version in dict.fromkeys(group_versions):
        try:
            served[group_version] = await client.discover(group_version)
        except ApiError as err:
            served[group_version] = set()
            errors.append(Row("crd", Status.ERROR, group_version, f"discovery failed: {err}"))
    return served, errors


async def _review(client: KubeClient, check: AccessCheck, rule: Rule, limiter: anyio.CapacityLimiter) -> Row:
    async with limiter:
        try:
            review: Any = await client.request(
                "POST", SSAR_PATH, body=review_body(check), resource="selfsubjectaccessreviews.authorization.k8s.io"
            )
        except (ApiError, TransportError) as err:
            # Not an answer about the permission: say what went wrong instead of "missing".
            return dataclasses.replace(permission_row(check, rule, {}), status=Status.ERROR, detail=str(err))
    return permission_row(check, rule, review)


async def diagnose(
    client: KubeClient, *, owned: Iterable[Resource], own_namespace: str, namespaces: Sequence[str] = ()
) -> list[Row]:
    """Every row of the report; stops after the first when the API server does not answer."""
    rows = [await _api_server(client)]
    if rows[0].status != Status.OK:
        return rows
    optional = optional_kinds(owned)
    served, errors = await _served(client, [r.api_version for r in (*REQUIRED_KINDS, *optional)])
    rows += errors + crd_rows(served, optional)
    checks = scoped_checks(own_namespace, namespaces)
    results: list[Row | None] = [None] * len(checks)
    limiter = anyio.CapacityLimiter(CONCURRENT_REVIEWS)

    async def one(index: int, check: AccessCheck, rule: Rule) -> None:
        results[index] = await _review(client, check, rule, limiter)

    async with anyio.create_task_group() as tg:
        for index, (check, rule) in enumerate(checks):
            tg.start_soon(one, index, check, rule)
    rows += [row for row in results if row is not None]
    return rows
