"""The dynamic Kubernetes client: plain dicts in and out, every call addressed by a `Resource`.

The verbs of the API server over our own HTTP transport (`actors.client.transport`), configured by
kubernetes-asyncio's loaders (`actors.client.config`); answers are decoded with a depth bound
(`actors.client.decode`). Failures surface only as `actors.client.errors` types.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from actors.client import decode
from actors.client.config import load_configuration
from actors.client.errors import ApiError, api_error_from_status
from actors.client.resource import KubeObject, Resource
from actors.client.transport import RequestObserver, Transport, WriteFence

if TYPE_CHECKING:
    from kubernetes_asyncio.client.configuration import Configuration

# The largest object the API server stores (etcd's default request limit, 1.5 MiB).
MAX_OBJECT_BYTES = 3 * 512 * 1024

APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


@dataclass(frozen=True)
class Page:
    """One page of a list: its objects, and the list's resourceVersion (on every page; the last
    one's, `done`, is what a watch starts from)."""

    items: builtins.list[KubeObject]
    resource_version: str
    done: bool


class KubeClient:
    """Dynamic client: every call takes a `Resource` and plain dicts."""

    def __init__(
        self,
        configuration: Configuration,
        *,
        user_agent: str = "actors",
        observers: Sequence[RequestObserver] = (),
    ) -> None:
        self._transport = Transport(configuration, user_agent=user_agent, observers=observers)

    @property
    def configuration(self) -> Configuration:
        return self._transport.configuration

    def observe(self, observer: RequestObserver) -> None:
        """Call `observer` after every request from now on (metrics, benchmarks, tests)."""
        self._transport.observers.append(observer)

    def fence_writes(self, fence: WriteFence | None) -> None:
        """Ask `fence` before every write from now on; it raises WriteWithheld to keep one unsent."""
        self._transport.fence = fence

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
        await self._transport.close()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

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
        """Any request by path (for what no verb below covers); the decoded answer."""
        return await self._transport.request(
            method,
            path,
            query=query,
            body=body,
            content_type=content_type,
            timeout=timeout,
            resource=resource,
            name=name,
        )

    # -- verbs -----------------------------------------------------------------------------

    async def get(self, res: Resource, namespace: str | None, name: str) -> KubeObject | None:
        try:
            obj: KubeObject = await self.request("GET", res.path(namespace, name), resource=str(res), name=name)
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
        result: KubeObject = await self.request("GET", res.path(namespace), query=query, resource=str(res))
        return result

    async def list_pages(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        page_size: int = 500,
        page_bytes: int = 4 * 1024 * 1024,
    ) -> AsyncGenerator[Page, None]:
        """The list, one page at a time, each page at most about `page_bytes` of JSON: the first
        asks for as many objects as fit if each were as large as the API server stores
        (MAX_OBJECT_BYTES), each next one for as many as fit at the size the last page's objects
        had, up to `page_size`. So a namespace of huge objects is read a few at a time and
        memory holds one bounded page, whatever anyone stored."""
        limit = max(1, min(page_size, page_bytes // MAX_OBJECT_BYTES))
        token: str | None = None
        while True:
            query = {"limit": str(limit)}
            if label_selector:
                query["labelSelector"] = label_selector
            if token:
                query["continue"] = token
            raw = await self._transport.request_raw("GET", res.path(namespace), query=query, resource=str(res))
            page: KubeObject = decode.loads(raw) if raw else {}
            items: builtins.list[KubeObject] = page.get("items") or []
            metadata = page.get("metadata") or {}
            token = metadata.get("continue") or None
            yield Page(items, str(metadata.get("resourceVersion", "")), done=token is None)
            if token is None:
                return
            per_object = max(1, len(raw) // max(1, len(items)))
            limit = max(1, min(page_size, page_bytes // per_object))
            del raw, page, items  # the caller has read this page: only one is held at a time

    async def list_all(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        page_size: int = 500,
    ) -> tuple[builtins.list[KubeObject], str]:
        """All items across pages, and the list's resourceVersion (for small lists: all in memory)."""
        items: builtins.list[KubeObject] = []
        resource_version = ""
        async for page in self.list_pages(res, namespace, label_selector=label_selector, page_size=page_size):
            items.extend(page.items)
            resource_version = page.resource_version
        return items, resource_version

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
        stream = self._transport.stream_lines(
            res.path(namespace), query, resource=str(res), read_timeout=timeout_seconds + 30
        )
        async with aclosing(stream) as lines:  # the response is released however the caller stops
            async for line in lines:
                event = decode.loads(line)
                if event.get("type") == "ERROR":
                    raise api_error_from_status(int(event["object"].get("code", 500)), event["object"])
                yield event

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
