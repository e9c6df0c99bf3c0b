"""A lean, dynamic Kubernetes REST client on top of kubernetes-asyncio's transport and config.

We talk JSON dicts to the API server and never use the ~770 generated model classes, whose import
alone costs ~60 MiB. `kubernetes_asyncio.client/__init__.py` imports all of them, so we register a
namespace stub for that package before importing the three submodules we need (configuration,
rest, api_client) and the config loaders. Only this module knows about that trick.
"""

from __future__ import annotations

import builtins
import importlib.util
import json
import ssl
import sys
import time
import types
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from actors import decode
from actors.interface import KubeObject, Resource


def _install_lean_client_package() -> None:
    """Register stubs for `kubernetes_asyncio` and `kubernetes_asyncio.client` (whose __init__
    files import every API and model class), then import only the submodules we use."""
    if "kubernetes_asyncio.client" in sys.modules:
        return
    spec = importlib.util.find_spec("kubernetes_asyncio")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("kubernetes_asyncio is not installed")
    root = Path(next(iter(spec.submodule_search_locations)))
    for name, path in (("kubernetes_asyncio", root), ("kubernetes_asyncio.client", root / "client")):
        if name not in sys.modules:
            stub = types.ModuleType(name)
            stub.__path__ = [str(path)]
            sys.modules[name] = stub
    # api_client.py does `import kubernetes_asyncio.client.models` only to deserialize typed
    # responses, which we never ask for.
    sys.modules["kubernetes_asyncio.client.models"] = types.ModuleType("kubernetes_asyncio.client.models")
    from kubernetes_asyncio.client import api_client, configuration, exceptions, rest

    client = sys.modules["kubernetes_asyncio.client"]
    client.Configuration = configuration.Configuration  # type: ignore[attr-defined]
    client.ApiClient = api_client.ApiClient  # type: ignore[attr-defined]
    client.ApiException = exceptions.ApiException  # type: ignore[attr-defined]
    client.rest = rest  # type: ignore[attr-defined]


_install_lean_client_package()

from kubernetes_asyncio.client.configuration import Configuration  # noqa: E402
from kubernetes_asyncio.config import kube_config  # noqa: E402
from kubernetes_asyncio.config.incluster_config import load_incluster_config  # noqa: E402

APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"

# Observer of every request: (verb, resource, status code, seconds). Feeds metrics and benchmarks.
RequestObserver = Callable[[str, str, int, float], None]


@dataclass
class ApiError(Exception):
    """A non-2xx answer from the API server, with the decoded metav1.Status when there is one."""

    status: int
    reason: str
    message: str
    body: dict[str, Any]

    def __str__(self) -> str:
        return f"{self.status} {self.reason}: {self.message}"

    @property
    def causes(self) -> list[dict[str, Any]]:
        details = self.body.get("details") or {}
        causes = details.get("causes") or []
        return [c for c in causes if isinstance(c, dict)]


def _verb(method: str, query: Mapping[str, str], name: str | None) -> str:
    if query.get("watch") == "true":
        return "watch"
    if method == "GET":
        return "get" if name else "list"
    if method == "PATCH":
        return "dryrun" if query.get("dryRun") == "All" else "patch"
    return {"POST": "create", "PUT": "update", "DELETE": "delete"}.get(method, method.lower())


class KubeClient:
    """Dynamic client: every call takes a `Resource` and plain dicts."""

    def __init__(
        self, configuration: Configuration, observer: RequestObserver | None = None, *, user_agent: str = "actors"
    ) -> None:
        self.configuration = configuration
        # The API server names the field manager of a write that is not an apply (a status update,
        # a finalizer patch) after the User-Agent's product token; aiohttp's default would make
        # those writes appear as "Python" in managedFields.
        self.user_agent = user_agent
        self.observers: list[RequestObserver] = [observer] if observer else []
        self._session: aiohttp.ClientSession | None = None
        self._proxy = _proxy_for(configuration)

    def _http(self) -> aiohttp.ClientSession:
        """One pooled session, created on first use inside the running event loop.

        Our own rather than kubernetes-asyncio's RESTClientObject, whose session trusts the
        environment: aiohttp then re-reads ~/.netrc and the proxy variables in a worker thread on
        every request, which profiling showed as a fifth of the provider's CPU at scale. The proxy
        is resolved once, at construction, instead.
        """
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=64, ssl=_ssl_context(self.configuration))
            self._session = aiohttp.ClientSession(connector=connector, trust_env=False, read_bufsize=2**21)
        return self._session

    def _request_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if self._proxy:
            options["proxy"] = self._proxy
            if self.configuration.proxy_headers:
                options["proxy_headers"] = self.configuration.proxy_headers
        if self.configuration.tls_server_name:
            options["server_hostname"] = self.configuration.tls_server_name
        return options

    @classmethod
    async def connect(cls, kubeconfig: str | None = None, context: str | None = None) -> KubeClient:
        """In-cluster config when running in a pod and no kubeconfig is given, else the kubeconfig."""
        configuration = Configuration()
        if kubeconfig is None and _in_cluster():
            load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        else:
            await kube_config.load_kube_config(
                config_file=kubeconfig, context=context, client_configuration=configuration
            )
        return cls(configuration)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- transport -------------------------------------------------------------------------

    async def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": self.user_agent}
        if content_type:
            headers["Content-Type"] = content_type
        settings = await self.configuration.auth_settings()
        for setting in settings.values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[setting["key"]] = setting["value"]
        return headers

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: float | None = 60.0,
        resource: str = "",
        name: str | None = None,
    ) -> Any:
        query = dict(query or {})
        url = f"{self.configuration.host}{path}"
        headers = await self._headers(content_type or ("application/json" if body is not None else None))
        started = time.perf_counter()
        code = 0
        try:
            async with self._http().request(
                method,
                url,
                params=query or None,
                headers=headers,
                data=json.dumps(body) if body is not None else None,
                timeout=aiohttp.ClientTimeout(total=timeout),
                **self._request_options(),
            ) as response:
                code = response.status
                raw = await response.read()
        finally:
            for observe in self.observers:
                observe(_verb(method, query, name), resource, code, time.perf_counter() - started)
        if not 200 <= code <= 299:
            raise _api_error(code, _decode_error_body(raw))
        return decode.loads(raw) if raw else {}

    # -- verbs -----------------------------------------------------------------------------

    async def get(self, res: Resource, namespace: str | None, name: str) -> KubeObject | None:
        try:
            obj: KubeObject = await self.request(
                "GET", res.path(namespace, name), resource=str(res), name=name
            )
            return obj
        except ApiError as err:
            if err.status == 404:
                return None
            raise

    async def list(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        resource_version: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> KubeObject:
        query: dict[str, str] = {}
        if label_selector:
            query["labelSelector"] = label_selector
        if resource_version is not None:
            query["resourceVersion"] = resource_version
        if limit:
            query["limit"] = str(limit)
        if continue_token:
            query["continue"] = continue_token
        result: KubeObject = await self.request(
            "GET", res.path(namespace), query=query, resource=str(res)
        )
        return result

    async def list_all(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        page_size: int = 500,
    ) -> tuple[builtins.list[KubeObject], str]:
        """All items across pages, and the list's resourceVersion."""
        items: builtins.list[KubeObject] = []
        token: str | None = None
        while True:
            page = await self.list(
                res, namespace, label_selector=label_selector, limit=page_size, continue_token=token
            )
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items, str((page.get("metadata") or {}).get("resourceVersion", ""))

    async def watch(
        self,
        res: Resource,
        namespace: str | None,
        resource_version: str,
        *,
        label_selector: str | None = None,
        timeout_seconds: int = 300,
    ) -> AsyncIterator[dict[str, Any]]:
        """Yield raw watch events ({type, object}); ERROR events are raised as ApiError."""
        query = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout_seconds),
        }
        if label_selector:
            query["labelSelector"] = label_selector
        url = f"{self.configuration.host}{res.path(namespace)}"
        headers = await self._headers(None)
        started = time.perf_counter()
        response = await self._http().request(
            "GET",
            url,
            params=query,
            headers=headers,
            timeout=aiohttp.ClientTimeout(sock_connect=10, sock_read=timeout_seconds + 30),
            **self._request_options(),
        )
        for observe in self.observers:
            observe("watch", str(res), response.status, time.perf_counter() - started)
        try:
            if response.status != 200:
                raise _api_error(response.status, _decode_error_body(await response.read()))
            async for line in response.content:
                if not line.strip():
                    continue
                event = decode.loads(line)
                if event.get("type") == "ERROR":
                    raise _api_error(int(event["object"].get("code", 500)), event["object"])
                yield event
        finally:
            response.release()

    async def apply(
        self,
        res: Resource,
        obj: KubeObject,
        *,
        field_manager: str,
        force: bool = False,
        dry_run: bool = False,
        subresource: str = "",
    ) -> KubeObject:
        """Server-side apply. The content type is what makes it SSA (not a merge patch)."""
        meta = obj["metadata"]
        query = {"fieldManager": field_manager, "force": "true" if force else "false"}
        if dry_run:
            query["dryRun"] = "All"
        path = res.path(meta.get("namespace"), meta["name"]) + (f"/{subresource}" if subresource else "")
        result: KubeObject = await self.request(
            "PATCH",
            path,
            query=query,
            body=obj,
            content_type=APPLY_PATCH,
            resource=_label(res, subresource),
            name=meta["name"],
        )
        return result

    async def patch(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        content_type: str = MERGE_PATCH,
        subresource: str = "",
    ) -> KubeObject:
        path = res.path(namespace, name) + (f"/{subresource}" if subresource else "")
        result: KubeObject = await self.request(
            "PATCH", path, body=body, content_type=content_type, resource=_label(res, subresource), name=name
        )
        return result

    async def create(self, res: Resource, obj: KubeObject) -> KubeObject:
        result: KubeObject = await self.request(
            "POST", res.path(obj["metadata"].get("namespace")), body=obj, resource=str(res)
        )
        return result

    async def replace(self, res: Resource, obj: KubeObject, *, subresource: str = "") -> KubeObject:
        meta = obj["metadata"]
        path = res.path(meta.get("namespace"), meta["name"]) + (f"/{subresource}" if subresource else "")
        result: KubeObject = await self.request(
            "PUT", path, body=obj, resource=_label(res, subresource), name=meta["name"]
        )
        return result

    async def delete(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        *,
        propagation: str = "Background",
        uid: str | None = None,
    ) -> bool:
        """Delete; True when the object was there. Already-gone is success (idempotent)."""
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            await self.request(
                "DELETE", res.path(namespace, name), body=body, resource=str(res), name=name
            )
            return True
        except ApiError as err:
            if err.status == 404:
                return False
            raise

    async def discover(self, group_version: str) -> set[str]:
        """Plural resource names served under one group/version (empty when not served)."""
        path = f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}"
        try:
            doc = await self.request("GET", path, resource="discovery")
        except ApiError as err:
            if err.status == 404:
                return set()
            raise
        return {r["name"] for r in doc.get("resources", []) if "/" not in r["name"]}


def _label(res: Resource, subresource: str) -> str:
    """The resource as requests are labelled (metrics, observers): `plural.group/version[/sub]`."""
    return f"{res}/{subresource}" if subresource else str(res)


def _decode_error_body(raw: bytes) -> Any:
    """A metav1.Status, or the plain text some paths answer with (e.g. `404 page not found` for a
    group that is not served)."""
    try:
        return decode.loads(raw) if raw else {}
    except ValueError:
        return raw.decode(errors="replace").strip()


def _api_error(code: int, decoded: Any) -> ApiError:
    body = decoded if isinstance(decoded, dict) else {}
    return ApiError(
        status=code,
        reason=str(body.get("reason", "")),
        message=str(body.get("message", decoded)),
        body=body,
    )


def _ssl_context(configuration: Configuration) -> ssl.SSLContext:
    """TLS as the kubeconfig or in-cluster config describes it."""
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _proxy_for(configuration: Configuration) -> str | None:
    """The kubeconfig's proxy-url, else the environment's proxy for the API server, else none."""
    if configuration.proxy:
        return str(configuration.proxy)
    host = urllib.parse.urlsplit(str(configuration.host)).hostname or ""
    if urllib.request.proxy_bypass(host):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get("https") or proxies.get("http")


def _in_cluster() -> bool:
    import os

    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and Path(
        "/var/run/secrets/kubernetes.io/serviceaccount/token"
    ).exists()
