"""The CRDs and KServe presets from shared/crds: loaded, installed, waited for; and the few objects
the harness creates itself (namespaces, ServiceAccount tokens). Writes a busy API server refuses
for now (429, 5xx, a dropped connection) are retried."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import anyio
import yaml
from tenacity import retry, retry_if_exception, stop_after_delay, wait_exponential, wait_random

from actors.client import ApiError, KubeClient, TransportError
from actors.interface import KubeObject, Resource
from plane.binaries import crds_dir
from plane.constants import (
    CRD,
    CRD_GROUPS,
    LLM_ISVC_CONFIG,
    NAMESPACE,
    SERVICE_ACCOUNT,
    ControlPlaneError,
)

# Only the plain controller-gen CRDs: presets/ are LLMInferenceServiceConfig objects,
# chart-patches/ are partial CRDs, and gateway-inference-extension.yaml duplicates two CRDs of
# inference-extension/ (see shared/crds/SOURCES.md).
_GROUP_GLOBS: dict[str, str] = {"kserve": "serving.kserve.io_*.yaml"}

# cert-manager's CRDs are Helm templates whose label values the apiserver would reject; this is
# what `helm template` renders for a release named cert-manager.
_CERT_MANAGER_TEMPLATES = {
    '{{ template "cert-manager.name" . }}': "cert-manager",
    "{{ .Release.Name }}": "cert-manager",
}


def _cache_dir() -> Path:
    base = os.environ.get("PROVIDER_KSERVE_CACHE") or str(Path.home() / ".cache" / "provider-kserve")
    return Path(base) / "crd-json"


def _load_yaml_docs(path: Path, replacements: dict[str, str] | None = None) -> list[KubeObject]:
    """All YAML documents of a file, cached as JSON keyed by content: parsing the ~10 MB of CRD
    YAML takes seconds even with libyaml, json.loads takes tens of milliseconds."""
    text = path.read_text()
    for old, new in (replacements or {}).items():
        text = text.replace(old, new)
    digest = hashlib.sha256(text.encode()).hexdigest()
    cached = _cache_dir() / f"{digest}.json"
    with contextlib.suppress(OSError, ValueError):
        docs: list[KubeObject] = json.loads(cached.read_text())
        return docs
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    docs = [d for d in yaml.load_all(text, Loader=loader) if isinstance(d, dict)]
    with contextlib.suppress(OSError):
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(docs))
        tmp.replace(cached)
    return docs


def _prepare_crd(crd: KubeObject, source: Path) -> KubeObject:
    for key, value in (crd["metadata"].get("labels") or {}).items():
        if "{{" in str(value):
            raise ControlPlaneError(f"{source}: label {key}={value!r} is an unrendered Helm template")
    spec = crd["spec"]
    # No conversion webhook runs in tests: a CRD whose upstream form converts through a webhook
    # would fail every read of a non-storage version, so it is always installed with strategy None.
    if (spec.get("conversion") or {}).get("strategy", "None") != "None":
        spec["conversion"] = {"strategy": "None"}
    return crd


def load_crds(groups: Iterable[str] | None = None, exclude: Iterable[str] = ()) -> list[KubeObject]:
    """The CRDs from shared/crds, ready to create.

    `groups` picks directories (see CRD_GROUPS; default all). `exclude` drops whole groups or
    single CRDs by name (e.g. "prometheus-operator" or "servicemonitors.monitoring.coreos.com").
    """
    root = crds_dir()
    if not root.is_dir():
        raise ControlPlaneError(f"CRD directory {root} not found (set PROVIDER_KSERVE_SHARED)")
    chosen = list(CRD_GROUPS if groups is None else groups)
    unknown = sorted(set(chosen) - set(CRD_GROUPS))
    if unknown:
        raise ControlPlaneError(f"unknown CRD groups {unknown}; known: {list(CRD_GROUPS)}")
    skip = set(exclude)
    crds: dict[str, KubeObject] = {}
    for group in chosen:
        if group in skip:
            continue
        files = sorted((root / group).glob(_GROUP_GLOBS.get(group, "*.yaml")))
        if not files:
            raise ControlPlaneError(f"no CRD files in {root / group}")
        replacements = _CERT_MANAGER_TEMPLATES if group == "cert-manager" else None
        for path in files:
            for doc in _load_yaml_docs(path, replacements):
                if doc.get("kind") != "CustomResourceDefinition":
                    continue
                name = doc["metadata"]["name"]
                if name in skip:
                    continue
                if name in crds:
                    raise ControlPlaneError(f"{path}: CRD {name} is defined twice")
                crds[name] = _prepare_crd(doc, path)
    return list(crds.values())


def load_llm_presets() -> list[KubeObject]:
    """KServe's LLMInferenceServiceConfig presets (config-llm-*.yaml), without a namespace."""
    files = sorted((crds_dir() / "kserve" / "presets").glob("config-llm-*.yaml"))
    if not files:
        raise ControlPlaneError(f"no presets in {crds_dir() / 'kserve' / 'presets'}")
    return [d for path in files for d in _load_yaml_docs(path) if d.get("kind") == LLM_ISVC_CONFIG.kind]


# -- API operations ---------------------------------------------------------------------------


def transient(err: BaseException) -> bool:
    """What a busy or restarting API server answers and a retry fixes: 429, any 5xx (a 504 on a
    large CRD under load was seen), timeouts and dropped connections."""
    if isinstance(err, ApiError):
        return err.status == 429 or err.status >= 500
    return isinstance(err, TimeoutError | TransportError | ConnectionError)


# For set-up calls: a loaded machine must slow them down, not abort them.
retry_transient = retry(
    retry=retry_if_exception(transient),
    wait=wait_exponential(multiplier=0.2, max=5.0) + wait_random(0, 0.5),
    stop=stop_after_delay(180),
    reraise=True,
)


@retry_transient
async def create_or_replace(client: KubeClient, res: Resource, obj: KubeObject) -> KubeObject:
    """POST, or PUT over an existing object. Not apply: client-side apply would put the whole
    object into an annotation (256 KiB limit, the big KServe CRDs are ~0.7 MB of JSON)."""
    try:
        return await client.create(res, obj)
    except ApiError as err:
        if err.status != 409:
            raise
    meta = obj["metadata"]
    current = await client.get(res, meta.get("namespace"), meta["name"])
    if current is None:
        return await client.create(res, obj)
    replacement = {**obj, "metadata": {**meta, "resourceVersion": current["metadata"]["resourceVersion"]}}
    return await client.replace(res, replacement)


def _established(crd: KubeObject) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


async def wait_established(client: KubeClient, names: Iterable[str], timeout: float = 180.0) -> None:
    """Until every named CRD is Established. Uses list+watch: the CRDs total several MB of JSON,
    so polling the whole list would cost more than the establishing itself."""
    pending = set(names)
    deadline = time.monotonic() + timeout
    while pending:
        try:
            items, rv = await retry_transient(client.list_all)(CRD)
        except Exception as err:
            raise ControlPlaneError(f"listing CRDs failed: {err}") from err
        pending -= {c["metadata"]["name"] for c in items if _established(c)}
        remaining = deadline - time.monotonic()
        if not pending:
            return
        if remaining <= 0:
            raise ControlPlaneError(f"CRDs not Established after {timeout:.0f}s: {sorted(pending)}")
        # A watch the busy server drops is simply listed again.
        with anyio.move_on_after(remaining), contextlib.suppress(ApiError, TransportError, ConnectionError):
            async for event in client.watch(CRD, None, rv, timeout_seconds=max(1, int(remaining))):
                obj = event.get("object") or {}
                if event.get("type") in ("ADDED", "MODIFIED") and _established(obj):
                    pending.discard(obj["metadata"]["name"])
                    if not pending:
                        return


async def wait_served(client: KubeClient, crds: Iterable[KubeObject], timeout: float = 60.0) -> None:
    """Until discovery lists every served version of each CRD: Established flips slightly before
    the apiserver's handler serves the resource, and a test creating a CR right away would 404."""
    wanted: dict[str, set[str]] = {}
    for crd in crds:
        spec = crd["spec"]
        for version in spec["versions"]:
            if version.get("served", True):
                wanted.setdefault(f"{spec['group']}/{version['name']}", set()).add(spec["names"]["plural"])
    deadline = time.monotonic() + timeout
    while wanted:
        for group_version in list(wanted):
            try:
                served = await client.discover(group_version)
            except ValueError:
                # A group the apiserver does not serve yet answers 404 with a plain-text body,
                # which KubeClient.request fails to decode as JSON.
                continue
            except Exception as err:
                if not transient(err):
                    raise
                continue
            if wanted[group_version] <= served:
                del wanted[group_version]
        if not wanted:
            return
        if time.monotonic() > deadline:
            raise ControlPlaneError(f"not in discovery after {timeout:.0f}s: {sorted(wanted)}")
        await anyio.sleep(0.1)


async def install_crds(
    client: KubeClient,
    groups: Iterable[str] | None = None,
    exclude: Iterable[str] = (),
    *,
    timeout: float = 180.0,
) -> list[str]:
    """Create (or replace) the CRDs and wait until they are Established and served. Returns their
    names, sorted."""
    crds = load_crds(groups, exclude)
    # Bounded: unbounded was measured no faster on 2 cores, and every in-flight body of up to
    # 0.7 MB is held several times over by client and server.
    gate = anyio.CapacityLimiter(4)

    async def one(crd: KubeObject) -> None:
        async with gate:
            await create_or_replace(client, CRD, crd)

    async with anyio.create_task_group() as tg:
        for crd in crds:
            tg.start_soon(one, crd)
    names = sorted(c["metadata"]["name"] for c in crds)
    await wait_established(client, names, timeout)
    await wait_served(client, crds, timeout)
    return names


async def delete_crd(client: KubeClient, name: str, *, wait: bool = True, timeout: float = 180.0) -> bool:
    """Delete one CRD (and with it all its objects); True when it existed. With `wait`, returns
    only once the apiserver no longer has it. The apiserver first deletes every object of the kind
    in every namespace, one by one: on a shared, loaded control plane that takes a while, so the
    timeout is generous and its error says how far the deletion got (the CRD's Terminating
    condition)."""
    existed = await client.delete(CRD, None, name)
    deadline = time.monotonic() + timeout
    while wait and (crd := await client.get(CRD, None, name)) is not None:
        if time.monotonic() > deadline:
            conditions = (crd.get("status") or {}).get("conditions") or []
            terminating = [c for c in conditions if c.get("type") == "Terminating"]
            raise ControlPlaneError(f"CRD {name} still present {timeout:.0f}s after delete: {terminating}")
        await anyio.sleep(0.2)
    return existed


async def install_llm_presets(client: KubeClient, namespace: str) -> list[str]:
    """Create KServe's LLMInferenceServiceConfig presets in `namespace` (upstream puts them in
    `kserve`). Needs the KServe CRDs. Returns the preset names, sorted."""
    presets = load_llm_presets()
    for preset in presets:
        preset["metadata"]["namespace"] = namespace
        await create_or_replace(client, LLM_ISVC_CONFIG, preset)
    return sorted(p["metadata"]["name"] for p in presets)


@retry_transient
async def ensure_namespace(client: KubeClient, name: str) -> None:
    try:
        await client.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    except ApiError as err:
        if err.status != 409:
            raise


async def service_account_token(
    client: KubeClient,
    namespace: str,
    name: str,
    *,
    expiration_seconds: int = 3600,
    audiences: Sequence[str] = (),
) -> str:
    """A bound token for ServiceAccount namespace/name (created if missing) via TokenRequest.
    Pair with ControlPlane.write_kubeconfig to run something under that identity (RBAC applies)."""
    await ensure_namespace(client, namespace)
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}}
    try:
        await client.create(SERVICE_ACCOUNT, sa)
    except ApiError as err:
        if err.status != 409:
            raise
    spec: dict[str, Any] = {"expirationSeconds": expiration_seconds}
    if audiences:
        spec["audiences"] = list(audiences)
    review = await client.request(
        "POST",
        SERVICE_ACCOUNT.path(namespace, name, "token"),
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
        resource="serviceaccounts/token",
    )
    token: str = review["status"]["token"]
    return token
