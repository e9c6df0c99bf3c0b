"""The Kubernetes Pod Security Standards, applied to the parts of a pod spec a user wrote.

An Instance can carry pod settings that the provider passes through to KServe (the llm topology's
inline `config`), and KServe's controller, not the user, creates the pods. Without a check, whoever
may create an Instance would get pods their namespace's own policy refuses them. So every field
the user set is checked against the level of the Instance's namespace
(`pod-security.kubernetes.io/enforce`, or the chart's default where the namespace has no label):
`baseline` and `restricted` as the standards define them (v1.34), for the settings present. What
the user left out comes from KServe's presets, which the cluster operator chose.

The labels and annotations KServe copies onto the pods are held to the same standards (the AppArmor
and seccomp annotations, which KServe puts on the pod template as they are), and labels may not
override the selectors KServe and the provider find the pods and their objects by (the
`app.kubernetes.io/`, `kserve.io/`, `serving.kserve.io/`, `llm-d.ai/` and `core.openeverest.io/`
keys).

On top of the standards, the provider refuses by default two things the standards allow but that
would let an Instance reach what its author may not: choosing the pod's ServiceAccount, and
referencing Secrets (volumes, env). The chart can allow them (`podSecurity.allowServiceAccount`,
`podSecurity.allowSecretReferences`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from provider.rules.quote import quote

Level = Literal["privileged", "baseline", "restricted"]
LEVELS: Final[tuple[Level, ...]] = ("privileged", "baseline", "restricted")
ENFORCE_LABEL: Final = "pod-security.kubernetes.io/enforce"

_BASELINE_CAPABILITIES: Final = frozenset(
    {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
     "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
)  # fmt: skip
_SAFE_SYSCTLS: Final = frozenset(
    {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
     "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
     "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
     "net.ipv4.tcp_keepalive_probes"}
)  # fmt: skip
_SELINUX_TYPES: Final = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
_RESTRICTED_VOLUMES: Final = frozenset(
    {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}
)
_CONTAINER_LISTS: Final = ("initContainers", "containers", "ephemeralContainers")
# The annotations the kubelet reads security profiles from (Pod Security admission checks them).
_APPARMOR_ANNOTATION: Final = "container.apparmor.security.beta.kubernetes.io/"
_SECCOMP_POD_ANNOTATION: Final = "seccomp.security.alpha.kubernetes.io/pod"
_SECCOMP_CONTAINER_ANNOTATION: Final = "container.seccomp.security.alpha.kubernetes.io/"
# Label keys KServe selects its workloads, Services and InferencePools by, and the provider its
# objects by: a label of the Instance's must not take them over on the pods.
_RESERVED_LABEL_PREFIXES: Final = (
    "app.kubernetes.io/",
    "kserve.io/",
    "serving.kserve.io/",
    "llm-d.ai/",
    "core.openeverest.io/",
)


@dataclass(frozen=True)
class PodPolicy:
    level: Level = "restricted"
    allow_service_account: bool = False
    allow_secret_references: bool = False


def _map(value: Any) -> Mapping[str, Any]:
    """`value` when it is a mapping, else empty: a wrongly typed field is the schema's to reject
    (at apply time), never a reason for this check to fail."""
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def level_of(namespace_labels: Mapping[str, str], default: Level) -> Level:
    value = namespace_labels.get(ENFORCE_LABEL, "")
    return value if value in LEVELS else default


def metadata_violation(annotations: Any, labels: Any, where: str, policy: PodPolicy) -> str | None:
    """The first annotation or label KServe would put on the pods that `policy` forbids or that
    would override a selector, as `<where>.<annotations|labels>["<key>"]: <why>`, or None."""
    for key in _map(labels):
        if str(key).startswith(_RESERVED_LABEL_PREFIXES):
            return f"{where}.labels[{quote(key)}]: the label is KServe's or the provider's (they select pods by it)"
    if policy.level == "privileged":
        return None
    for key, value in _map(annotations).items():
        why = _annotation_problem(str(key), str(value), policy.level)
        if why is not None:
            return f"{where}.annotations[{quote(key)}]: {why}"
    return None


def _annotation_problem(key: str, value: str, level: Level) -> str | None:
    if key.startswith(_APPARMOR_ANNOTATION) and value != "runtime/default" and not value.startswith("localhost/"):
        return _forbidden(level, f"AppArmor profile {value!r}")
    if key == _SECCOMP_POD_ANNOTATION or key.startswith(_SECCOMP_CONTAINER_ANNOTATION):
        if value == "unconfined":
            return _forbidden(level, "seccomp profile 'unconfined'")
        allowed = value in ("runtime/default", "docker/default") or value.startswith("localhost/")
        if level == "restricted" and not allowed:
            return _forbidden(level, f"seccomp profile {value!r}")
    return None


def violation(pod: Mapping[str, Any], where: str, policy: PodPolicy) -> str | None:
    """The first setting in `pod` (a PodSpec as the user wrote it) that `policy` forbids, as
    `<where>.<field>: <why>`, or None."""
    for path, why in _violations(pod, policy):
        return f"{where}.{path}: {why}"
    return None


def _violations(pod: Mapping[str, Any], policy: PodPolicy) -> Iterator[tuple[str, str]]:
    level = policy.level
    if not policy.allow_service_account:
        for field in ("serviceAccountName", "serviceAccount"):
            if pod.get(field):
                yield field, "choosing the pod's ServiceAccount is not allowed for Instances (chart: "
                "podSecurity.allowServiceAccount)"
    if not policy.allow_secret_references:
        yield from _secret_references(pod)
    if level == "privileged":
        return
    yield from _baseline_pod(pod, level)
    for path, container in _containers(pod):
        yield from ((f"{path}.{p}", why) for p, why in _container(container, level))


def _forbidden(level: Level, what: str) -> str:
    return f"{what} is not allowed by the Pod Security Standard {level!r} of this namespace"


def _baseline_pod(pod: Mapping[str, Any], level: Level) -> Iterator[tuple[str, str]]:
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(field) is True:
            yield field, _forbidden(level, f"{field}: true")
    context = _map(pod.get("securityContext"))
    yield from ((f"securityContext.{p}", why) for p, why in _security_context(context, level))
    for i, sysctl in enumerate(_list(context.get("sysctls"))):
        name = str(_map(sysctl).get("name", ""))
        if name not in _SAFE_SYSCTLS:
            yield f"securityContext.sysctls[{i}]", _forbidden(level, f"sysctl {name!r}")
    for i, volume in enumerate(_list(pod.get("volumes"))):
        kinds = [k for k in _map(volume) if k != "name"]
        if "hostPath" in kinds:
            yield f"volumes[{i}].hostPath", _forbidden(level, "a hostPath volume")
        elif level == "restricted" and any(k not in _RESTRICTED_VOLUMES for k in kinds):
            yield f"volumes[{i}]", _forbidden(level, f"a {'/'.join(kinds)} volume")


def _security_context(context: Mapping[str, Any], level: Level) -> Iterator[tuple[str, str]]:
    """Rules shared by the pod's and the containers' securityContext."""
    if _map(context.get("windowsOptions")).get("hostProcess") is True:
        yield "windowsOptions.hostProcess", _forbidden(level, "hostProcess: true")
    selinux = _map(context.get("seLinuxOptions"))
    if selinux.get("type", "") not in _SELINUX_TYPES or selinux.get("user") or selinux.get("role"):
        yield "seLinuxOptions", _forbidden(level, "a custom SELinux user, role or type")
    if _map(context.get("seccompProfile")).get("type") == "Unconfined":
        yield "seccompProfile.type", _forbidden(level, "seccompProfile Unconfined")
    if _map(context.get("appArmorProfile")).get("type") == "Unconfined":
        yield "appArmorProfile.type", _forbidden(level, "appArmorProfile Unconfined")
    if level == "restricted":
        if context.get("runAsNonRoot") is False:
            yield "runAsNonRoot", _forbidden(level, "runAsNonRoot: false")
        if context.get("runAsUser") == 0:
            yield "runAsUser", _forbidden(level, "running as user 0 (root)")


def _containers(pod: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for field in _CONTAINER_LISTS:
        for i, container in enumerate(_list(pod.get(field))):
            if isinstance(container, Mapping):
                yield f"{field}[{i}]", container


def _container(container: Mapping[str, Any], level: Level) -> Iterator[tuple[str, str]]:
    for i, port in enumerate(_list(container.get("ports"))):
        if _map(port).get("hostPort"):
            yield f"ports[{i}].hostPort", _forbidden(level, "a hostPort")
    context = _map(container.get("securityContext"))
    yield from ((f"securityContext.{p}", why) for p, why in _security_context(context, level))
    if context.get("privileged") is True:
        yield "securityContext.privileged", _forbidden(level, "privileged: true")
    if context.get("procMount") not in (None, "Default"):
        yield "securityContext.procMount", _forbidden(level, "a non-default procMount")
    added = [str(c) for c in _list(_map(context.get("capabilities")).get("add"))]
    allowed = {"NET_BIND_SERVICE"} if level == "restricted" else _BASELINE_CAPABILITIES
    for cap in added:
        if cap.removeprefix("CAP_") not in allowed:
            yield "securityContext.capabilities.add", _forbidden(level, f"adding capability {cap}")
    if level == "restricted" and context.get("allowPrivilegeEscalation") is True:
        yield "securityContext.allowPrivilegeEscalation", _forbidden(level, "allowPrivilegeEscalation: true")


def _secret_references(pod: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    why = "referencing Secrets is not allowed for Instances (chart: podSecurity.allowSecretReferences)"
    for i, volume in enumerate(_list(pod.get("volumes"))):
        if "secret" in _map(volume):
            yield f"volumes[{i}].secret", why
        for j, source in enumerate(_list(_map(_map(volume).get("projected")).get("sources"))):
            if "secret" in _map(source):
                yield f"volumes[{i}].projected.sources[{j}].secret", why
    for path, container in _containers(pod):
        for i, env in enumerate(_list(container.get("env"))):
            if "secretKeyRef" in _map(_map(env).get("valueFrom")):
                yield f"{path}.env[{i}].valueFrom.secretKeyRef", why
        for i, source in enumerate(_list(container.get("envFrom"))):
            if "secretRef" in _map(source):
                yield f"{path}.envFrom[{i}].secretRef", why
