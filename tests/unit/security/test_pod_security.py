"""provider.rules.pod_security: pass-through pod settings within the namespace's Pod Security level."""

from __future__ import annotations

from typing import Any

import pytest

from provider.rules.pod_security import Level, PodPolicy, level_of, metadata_violation, violation

RESTRICTED = PodPolicy("restricted")
BASELINE = PodPolicy("baseline")
PRIVILEGED = PodPolicy("privileged")


def main(**security_context: Any) -> dict[str, Any]:
    return {"containers": [{"name": "main", "securityContext": security_context}]}


@pytest.mark.parametrize(
    ("pod", "where"),
    [
        ({"hostPID": True}, "hostPID"),
        ({"hostNetwork": True}, "hostNetwork"),
        ({"hostIPC": True}, "hostIPC"),
        (main(privileged=True), "containers[0].securityContext.privileged"),
        (main(capabilities={"add": ["SYS_ADMIN"]}), "containers[0].securityContext.capabilities.add"),
        ({"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}, "volumes[0].hostPath"),
        ({"containers": [{"name": "m", "ports": [{"containerPort": 80, "hostPort": 80}]}]}, "containers[0].ports[0].hostPort"),
        (main(procMount="Unmasked"), "containers[0].securityContext.procMount"),
        (main(seccompProfile={"type": "Unconfined"}), "containers[0].securityContext.seccompProfile.type"),
        ({"securityContext": {"seLinuxOptions": {"type": "spc_t"}}}, "securityContext.seLinuxOptions"),
        ({"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}}, "securityContext.sysctls[0]"),
        ({"securityContext": {"windowsOptions": {"hostProcess": True}}}, "securityContext.windowsOptions.hostProcess"),
        ({"initContainers": [{"name": "i", "securityContext": {"privileged": True}}]}, "initContainers[0].securityContext.privileged"),
    ],
)  # fmt: skip
def test_baseline_violations_are_named_at_baseline_and_restricted(pod: dict[str, Any], where: str) -> None:
    for policy in (BASELINE, RESTRICTED):
        message = violation(pod, "llmEngine.parameters.config.template", policy)
        assert message is not None and message.startswith(f"llmEngine.parameters.config.template.{where}: ")
        assert f"Pod Security Standard '{policy.level}'" in message
    assert violation(pod, "t", PRIVILEGED) is None


@pytest.mark.parametrize(
    ("pod", "where"),
    [
        (main(allowPrivilegeEscalation=True), "containers[0].securityContext.allowPrivilegeEscalation"),
        (main(runAsNonRoot=False), "containers[0].securityContext.runAsNonRoot"),
        ({"securityContext": {"runAsUser": 0}}, "securityContext.runAsUser"),
        (main(capabilities={"add": ["CHOWN"]}), "containers[0].securityContext.capabilities.add"),
        ({"volumes": [{"name": "n", "nfs": {"server": "s", "path": "/"}}]}, "volumes[0]"),
    ],
)
def test_restricted_only_violations(pod: dict[str, Any], where: str) -> None:
    assert violation(pod, "t", BASELINE) is None
    assert (violation(pod, "t", RESTRICTED) or "").startswith(f"t.{where}: ")


def test_what_the_standards_allow_passes() -> None:
    pod = {
        "containers": [
            {
                "name": "main",
                "args": ["--enforce-eager"],
                "securityContext": {
                    "runAsNonRoot": True,
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "resources": {"limits": {"cpu": "1"}},
            }
        ],
        "volumes": [{"name": "cache", "emptyDir": {}}, {"name": "models", "persistentVolumeClaim": {"claimName": "m"}}],
    }
    assert violation(pod, "t", RESTRICTED) is None


def test_service_account_and_secrets_are_refused_unless_the_chart_allows_them() -> None:
    pod = {
        "serviceAccountName": "admin",
        "volumes": [{"name": "s", "secret": {"secretName": "db"}}],
        "containers": [
            {"name": "m", "env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "db", "key": "k"}}}]}
        ],
    }
    assert (violation(pod, "t", PRIVILEGED) or "").startswith("t.serviceAccountName: choosing the pod's ServiceAccount")
    allowed_sa = PodPolicy("privileged", allow_service_account=True)
    assert (violation(pod, "t", allowed_sa) or "").startswith("t.volumes[0].secret: referencing Secrets")
    without_volume = {**pod, "volumes": []}
    assert (violation(without_volume, "t", allowed_sa) or "").startswith(
        "t.containers[0].env[0].valueFrom.secretKeyRef"
    )
    assert violation(pod, "t", PodPolicy("privileged", True, True)) is None


def test_wrongly_typed_fields_are_left_to_the_schema() -> None:
    odd = {"securityContext": "x", "containers": "y", "volumes": [None, "z"], "initContainers": [{"ports": "p"}]}
    assert violation(odd, "t", RESTRICTED) is None


def test_the_namespace_label_picks_the_level() -> None:
    assert level_of({"pod-security.kubernetes.io/enforce": "baseline"}, "restricted") == "baseline"
    assert level_of({"pod-security.kubernetes.io/enforce": "nonsense"}, "restricted") == "restricted"
    assert level_of({}, "privileged") == "privileged"


@pytest.mark.parametrize(
    ("annotations", "labels", "level", "problem"),
    [
        (
            {"container.apparmor.security.beta.kubernetes.io/main": "unconfined"},
            {},
            "baseline",
            "AppArmor profile 'unconfined'",
        ),
        ({"container.apparmor.security.beta.kubernetes.io/main": "runtime/default"}, {}, "restricted", None),
        ({"container.apparmor.security.beta.kubernetes.io/main": "localhost/mine"}, {}, "restricted", None),
        ({"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}, {}, "baseline", "seccomp profile 'unconfined'"),
        ({"container.seccomp.security.alpha.kubernetes.io/main": "other"}, {}, "restricted", "seccomp profile 'other'"),
        ({"container.seccomp.security.alpha.kubernetes.io/main": "other"}, {}, "baseline", None),
        ({"container.apparmor.security.beta.kubernetes.io/main": "unconfined"}, {}, "privileged", None),
        ({}, {"app.kubernetes.io/name": "x"}, "privileged", "the label is KServe's or the provider's"),
        ({}, {"kserve.io/component": "workload"}, "baseline", "the label is KServe's or the provider's"),
        ({}, {"core.openeverest.io/provider": "x"}, "baseline", "the label is KServe's or the provider's"),
        ({"team": "a"}, {"team": "a", "app": "chat"}, "restricted", None),
    ],
)
def test_labels_and_annotations_that_reach_the_pods(
    annotations: dict[str, str], labels: dict[str, str], level: Level, problem: str | None
) -> None:
    found = metadata_violation(annotations, labels, "config", PodPolicy(level))
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found and found.startswith("config.")
