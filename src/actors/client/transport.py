"""The HTTP transport under `KubeClient`: one pooled aiohttp session, the proxy resolved once,
credentials on every request, every request observed, and failures as the client's own types.

Our own rather than kubernetes-asyncio's RESTClientObject, whose session trusts the environment:
aiohttp then re-reads ~/.netrc and the proxy variables in a worker thread on every request.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import aiohttp

from actors.client import decode, json_codec
from actors.client.config import proxy_for, ssl_context
from actors.client.errors import RequestTimeout, TransportError, WriteWithheld, api_error
from actors.observe.tracing import annotate_write

if TYPE_CHECKING:
    from kubernetes_asyncio.client.configuration import Configuration

# Observer of every request: (verb, resource, status code, seconds). Feeds metrics and benchmarks.
RequestObserver = Callable[[str, str, int, float], None]
# Asked before every write, with the request's method and resource: raises WriteWithheld to stop it.
WriteFence = Callable[[str, str], None]
_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# The write this task is sending (method, resource), for the fence's check at the connection.
_sending_write: ContextVar[tuple[str, str] | None] = ContextVar("sending_write", default=None)


def request_verb(method: str, query: Mapping[str, str], name: str | None) -> str:
    """The Kubernetes verb of a request, as the API server's audit log names it."""
    if query.get("watch") == "true":
        return "watch"
    if method == "GET":
        return "get" if name else "list"
    if method == "PATCH":
        return "dryrun" if query.get("dryRun") == "All" else "patch"
    return {"POST": "create", "PUT": "update", "DELETE": "delete"}.get(method, method.lower())


@contextmanager
def transport_errors() -> Iterator[None]:
    """aiohttp's and the socket layer's failures as the client's own types."""
    try:
        yield
    except TimeoutError as err:
        raise RequestTimeout(str(err) or "request timed out") from err
    except (aiohttp.ClientError, OSError) as err:
        raise TransportError(str(err) or type(err).__name__) from err


class _FencedConnector(aiohttp.TCPConnector):
    """Asks the transport's fence about a write once its connection is in hand, the last moment
    before its bytes go out. Opening a connection (TCP, then TLS over a slow network) takes round
    trips; a process paused meanwhile would, if asked before, send the write when it resumes. No
    client can close the window entirely (a paused process may stop between this check and the
    socket's write, or its bytes may wait in the network): this keeps it to a few instructions."""

    def __init__(self, transport: Transport, **options: Any) -> None:
        super().__init__(**options)
        self._transport = transport

    async def connect(
        self, req: aiohttp.ClientRequest, traces: list[aiohttp.tracing.Trace], timeout: aiohttp.ClientTimeout
    ) -> aiohttp.connector.Connection:
        connection = await super().connect(req, traces, timeout)
        write, fence = _sending_write.get(), self._transport.fence
        if write is not None and fence is not None:
            try:
                fence(*write)
            except BaseException:
                connection.release()  # unused: back to the pool
                raise
        return connection


class Transport:
    def __init__(self, configuration: Configuration, *, user_agent: str, observers: Sequence[RequestObserver]) -> None:
        self.configuration = configuration
        # Writes name their field manager explicitly (`fieldManager`); the User-Agent only names
        # the process in the API server's logs and audit events.
        self.user_agent = user_agent
        # A write's verb and status go on the span it was made in, when spans are exported.
        self.observers: list[RequestObserver] = [annotate_write, *observers]
        self.fence: WriteFence | None = None
        self._session: aiohttp.ClientSession | None = None
        self._proxy = proxy_for(configuration)

    def _http(self) -> aiohttp.ClientSession:
        """One pooled session, created on first use inside the running event loop."""
        if self._session is None:
            connector = _FencedConnector(self, limit=64, ssl=ssl_context(self.configuration))
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

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": self.user_agent}
        if content_type:
            headers["Content-Type"] = content_type
        settings = await self.configuration.auth_settings()
        for setting in settings.values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[setting["key"]] = setting["value"]
        return headers

    def _observe(self, verb: str, resource: str, code: int, started: float) -> None:
        for observe in self.observers:
            observe(verb, resource, code, time.perf_counter() - started)

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
        """One request; the decoded answer ({} for an empty one), ApiError for a non-2xx answer."""
        raw = await self.request_raw(
            method,
            path,
            query=query,
            body=body,
            content_type=content_type,
            timeout=timeout,
            resource=resource,
            name=name,
        )
        return decode.loads(raw) if raw else {}

    async def request_raw(
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
    ) -> bytes:
        """One request; the answer's bytes, ApiError for a non-2xx answer; WriteWithheld for a write
        the fence refuses (asked by the connector, see _FencedConnector)."""
        query = dict(query or {})
        headers = await self._headers(content_type or ("application/json" if body is not None else None))
        started = time.perf_counter()
        code, sent = 0, True
        sending = _sending_write.set((method, resource) if method in _WRITES else None)
        try:
            with transport_errors():
                async with self._http().request(
                    method,
                    f"{self.configuration.host}{path}",
                    params=query or None,
                    headers=headers,
                    data=json_codec.dumps(body) if body is not None else None,
                    timeout=aiohttp.ClientTimeout(total=timeout),
                    **self._request_options(),
                ) as response:
                    raw, code = await response.read(), response.status
        except WriteWithheld:
            sent = False  # never left the process: not a request to observe
            raise
        finally:
            _sending_write.reset(sending)
            if sent:
                self._observe(request_verb(method, query, name), resource, code, started)
        if not 200 <= code <= 299:
            raise api_error(code, raw)
        return raw

    async def stream_lines(
        self, path: str, query: Mapping[str, str], *, resource: str, read_timeout: float
    ) -> AsyncGenerator[bytes, None]:
        """The non-empty lines of a streamed GET (a watch), as they come."""
        headers = await self._headers(None)
        started = time.perf_counter()
        with transport_errors():
            response = await self._http().request(
                "GET",
                f"{self.configuration.host}{path}",
                params=query,
                headers=headers,
                timeout=aiohttp.ClientTimeout(sock_connect=10, sock_read=read_timeout),
                **self._request_options(),
            )
        self._observe("watch", resource, response.status, started)
        try:
            with transport_errors():
                if response.status != 200:
                    raise api_error(response.status, await response.read())
                async for line in response.content:
                    if line.strip():
                        yield line
        finally:
            response.release()
