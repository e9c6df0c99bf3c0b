"""The dynamic Kubernetes client: plain dicts in and out, every call addressed by a `Resource`.

Our own aiohttp transport (one pooled session, proxy resolved once) over kubernetes-asyncio's
configuration loaders (`actors.client.config`); answers are decoded with a depth bound
(`actors.client.decode`). Failures surface only as `actors.client.errors` types.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import aiohttp

from actors.client import decode, json_codec
from actors.client.config import Configuration, load_configuration, proxy_for, ssl_context
from actors.client.errors import ApiError, RequestTimeout, TransportError, api_error, api_error_from_status
from actors.client.resource import KubeObject, Resource

APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"

# Observer of every request: (verb, resource, status code, seconds). Feeds metrics and benchmarks.
RequestObserver = Callable[[str, str, int, float], None]


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
        self,
        configuration: Configuration,
        *,
        user_agent: str = "actors",
        observers: Sequence[RequestObserver] = (),
    ) -> None:
        self.configuration = configuration
        # Writes name their field manager explicitly (`fieldManager`); the User-Agent only names
        # the process in the API server's logs and audit events.
        self.user_agent = user_agent
        self._observers: list[RequestObserver] = list(observers)
        self._session: aiohttp.ClientSession | None = None
        self._proxy = proxy_for(configuration)

    def observe(self, observer: RequestObserver) -> None:
        """Call `observer` after every request from now on (metrics, benchmarks, tests)."""
        self._observers.append(observer)

    def _http(self) -> aiohttp.ClientSession:
        """One pooled session, created on first use inside the running event loop.

        Our own rather than kubernetes-asyncio's RESTClientObject, whose session trusts the
        environment: aiohttp then re-reads ~/.netrc and the proxy variables in a worker thread on
        every request, which profiling showed as a fifth of the provider's CPU at scale. The proxy
        is resolved once, at construction, instead.
        """
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=64, ssl=ssl_context(self.configuration))
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
    async def connect(
        cls,
        kubeconfig: str | None = None,
        context: str | None = None,
        *,
        user_agent: str = "actors",
        observers: Sequence[RequestObserver] = (),
    ) -> KubeClient:
        """In-cluster config when running in a pod and no kubeconfig is given, else the kubeconfig."""
        configuration = await load_configuration(kubeconfig, context)
        return cls(configuration, user_agent=user_agent, observers=observers)

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
            with _transport_errors():
                raw, code = await self._send(method, url, query, headers, body, timeout)
        finally:
            for observe in self._observers:
                observe(_verb(method, query, name), resource, code, time.perf_counter() - started)
        if not 200 <= code <= 299:
            raise api_error(code, raw)
        return decode.loads(raw) if raw else {}

    async def _send(
        self,
        method: str,
        url: str,
        query: Mapping[str, str],
        headers: Mapping[str, str],
        body: Any,
        timeout: float | None,
    ) -> tuple[bytes, int]:
        async with self._http().request(
            method,
            url,
            params=query or None,
            headers=headers,
            data=json_codec.dumps(body) if body is not None else None,
            timeout=aiohttp.ClientTimeout(total=timeout),
            **self._request_options(),
        ) as response:
            return await response.read(), response.status

    # -- verbs -----------------------------------------------------------------------------

    async def get(self, res: Resource, namespace: str | None, name: str) -> KubeObject | None:
        try:
            obj: KubeObject = await self.request(
                "GET", res.path(namespace, name), resource=str(res), name=name
            )
            return obj
        except ApiError as err:
            if err.not_found:
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
        with _transport_errors():
            response = await self._http().request(
                "GET",
                url,
                params=query,
                headers=headers,
                timeout=aiohttp.ClientTimeout(sock_connect=10, sock_read=timeout_seconds + 30),
                **self._request_options(),
            )
        for observe in self._observers:
            observe("watch", str(res), response.status, time.perf_counter() - started)
        try:
            with _transport_errors():
                if response.status != 200:
                    raise api_error(response.status, await response.read())
                async for line in response.content:
                    if not line.strip():
                        continue
                    event = decode.loads(line)
                    if event.get("type") == "ERROR":
                        raise api_error_from_status(int(event["object"].get("code", 500)), event["object"])
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
        subresource: str = "",
        dry_run: bool = False,
    ) -> KubeObject:
        """Server-side apply with strict field validation (an unknown or duplicate field fails the
        request instead of being dropped). The content type is what makes it SSA."""
        meta = obj["metadata"]
        query = {"fieldManager": field_manager, "force": "true" if force else "false", "fieldValidation": "Strict"}
        if dry_run:
            query["dryRun"] = "All"
        path = res.path(meta.get("namespace"), meta["name"], subresource)
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
        field_manager: str | None = None,
    ) -> KubeObject:
        path = res.path(namespace, name, subresource)
        result: KubeObject = await self.request(
            "PATCH",
            path,
            query=_manager_query(field_manager),
            body=body,
            content_type=content_type,
            resource=_label(res, subresource),
            name=name,
        )
        return result

    async def create(self, res: Resource, obj: KubeObject, *, field_manager: str | None = None) -> KubeObject:
        """POST; with a field manager, also with strict field validation."""
        query = _manager_query(field_manager)
        if field_manager:
            query["fieldValidation"] = "Strict"
        result: KubeObject = await self.request(
            "POST", res.path(obj["metadata"].get("namespace")), query=query, body=obj, resource=str(res)
        )
        return result

    async def replace(
        self, res: Resource, obj: KubeObject, *, subresource: str = "", field_manager: str | None = None
    ) -> KubeObject:
        meta = obj["metadata"]
        path = res.path(meta.get("namespace"), meta["name"], subresource)
        result: KubeObject = await self.request(
            "PUT",
            path,
            query=_manager_query(field_manager),
            body=obj,
            resource=_label(res, subresource),
            name=meta["name"],
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
        return await self.delete_object(res, namespace, name, propagation=propagation, uid=uid) is not None

    async def delete_object(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        *,
        propagation: str = "Background",
        uid: str | None = None,
    ) -> KubeObject | None:
        """Delete; the API server's answer (the object as deleted, or a Status), None when it was
        not there."""
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            answer: KubeObject = await self.request(
                "DELETE", res.path(namespace, name), body=body, resource=str(res), name=name
            )
            return answer
        except ApiError as err:
            if err.not_found:
                return None
            raise

    async def discover(self, group_version: str) -> set[str]:
        """Plural resource names served under one group/version (empty when not served)."""
        path = f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}"
        try:
            doc = await self.request("GET", path, resource="discovery")
        except ApiError as err:
            if err.not_found:
                return set()
            raise
        return {r["name"] for r in doc.get("resources", []) if "/" not in r["name"]}


def _label(res: Resource, subresource: str) -> str:
    """The resource as requests are labelled (metrics, observers): `plural.group/version[/sub]`."""
    return f"{res}/{subresource}" if subresource else str(res)


def _manager_query(field_manager: str | None) -> dict[str, str]:
    return {"fieldManager": field_manager} if field_manager else {}


@contextmanager
def _transport_errors() -> Iterator[None]:
    """aiohttp's and the socket layer's failures as the client's own types."""
    try:
        yield
    except TimeoutError as err:
        raise RequestTimeout(str(err) or "request timed out") from err
    except (aiohttp.ClientError, OSError) as err:
        raise TransportError(str(err) or type(err).__name__) from err
