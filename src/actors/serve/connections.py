"""Bounds on the connections each HTTP server keeps, so that idle or slow clients cannot take the
probes down.

aiohttp's server keeps a connection that never sends a request open for good, waits for a request
head however slowly it arrives, and holds a keep-alive connection for an hour: 20 000 idle
connections would fill the process's file descriptors, and then the kubelet's probe could not
connect and would restart a healthy provider. Each listener therefore:

- keeps at most `limit` connections (well below the process's descriptor limit, `connection_limit`);
  a new connection beyond it evicts the one that has waited longest without a request in progress,
  so a probe's fresh connection always gets in;
- closes a connection that sends nothing for `idle_timeout` seconds (before its first request, or
  between keep-alive requests);
- closes a connection whose request head is not complete `header_timeout` seconds after its first
  byte (slowloris: a byte every few seconds keeps no connection longer than that);
- closes a connection whose request is still being handled after `request_timeout` seconds.

A request is in progress from the moment aiohttp hands it to the application (the head is parsed)
until its handler returns; the middleware of `guarded_app` marks that.
"""

from __future__ import annotations

import asyncio
import resource
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from actors.queue.clock import Clock, MonotonicClock

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def connection_limit(listeners: int = 3) -> int:
    """Connections each listener keeps: an eighth of the descriptor limit shared by the listeners,
    at most 512 (far more than its legitimate clients need), at least 16."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    share = soft // (8 * listeners) if soft > 0 else 512
    return max(16, min(512, share))


@dataclass(frozen=True)
class ConnectionBounds:
    limit: int = field(default_factory=connection_limit)
    idle_timeout: float = 15.0
    header_timeout: float = 10.0
    request_timeout: float = 60.0
    # How often the bounds are checked (a connection is cut at most this much past its bound).
    sweep_interval: float = 1.0


@dataclass(eq=False)
class _Connection:
    transport: asyncio.Transport
    opened_at: float
    last_byte_at: float
    # When the first byte of a request head arrived (None: no head under way).
    head_since: float | None = None
    # When the request now being handled was handed to the application (None: none is).
    busy_since: float | None = None


class _GuardedProtocol(asyncio.Protocol):
    """aiohttp's request handler, with each event reported to the guard first."""

    def __init__(self, guard: ConnectionGuard, inner: asyncio.Protocol) -> None:
        self._guard = guard
        self._inner = inner

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)  # a TCP connection's
        self._guard.opened(self._inner, transport)
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self._guard.received(self._inner)
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self._guard.closed(self._inner)
        self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()


class ConnectionGuard:
    def __init__(self, bounds: ConnectionBounds, clock: Clock | None = None) -> None:
        self.bounds = bounds
        self._clock: Clock = clock or MonotonicClock()
        # aiohttp's per-connection handler (what `request.protocol` is) → its connection.
        self._connections: dict[object, _Connection] = {}
        self.evicted = 0
        self.cut = 0

    def __len__(self) -> int:
        return len(self._connections)

    def wrap(self, factory: Callable[[], Any]) -> Callable[[], asyncio.Protocol]:
        """A protocol factory for `loop.create_server` around aiohttp's."""
        return lambda: _GuardedProtocol(self, factory())

    def opened(self, handler: object, transport: asyncio.Transport) -> None:
        if len(self._connections) >= self.bounds.limit:
            self._evict()
        now = self._clock.now()
        self._connections[handler] = _Connection(transport, now, now)

    def received(self, handler: object) -> None:
        conn = self._connections.get(handler)
        if conn is not None:
            conn.last_byte_at = self._clock.now()
            if conn.head_since is None and conn.busy_since is None:
                conn.head_since = conn.last_byte_at

    def closed(self, handler: object) -> None:
        self._connections.pop(handler, None)

    def handling(self, handler: object, busy: bool) -> None:
        """A request of `handler`'s connection reached the application (True) or was answered."""
        conn = self._connections.get(handler)
        if conn is not None:
            conn.head_since = None
            conn.busy_since = self._clock.now() if busy else None
            conn.last_byte_at = self._clock.now()

    def _evict(self) -> None:
        """Close the connection that has waited longest without a request in progress."""
        idle = [(h, c) for h, c in self._connections.items() if c.busy_since is None]
        if idle:
            handler, oldest = min(idle, key=lambda item: item[1].last_byte_at)
            self._close(handler, oldest)
            self.evicted += 1

    def sweep(self) -> None:
        """Close every connection past one of its bounds."""
        now, b = self._clock.now(), self.bounds
        for handler, conn in list(self._connections.items()):
            if conn.busy_since is not None:
                over = now - conn.busy_since > b.request_timeout
            elif conn.head_since is not None:
                over = now - conn.head_since > b.header_timeout
            else:
                over = now - conn.last_byte_at > b.idle_timeout
            if over:
                self._close(handler, conn)
                self.cut += 1

    def _close(self, handler: object, conn: _Connection) -> None:
        # Forgotten now: the transport reports the loss only on the loop's next turn, and a burst
        # of new connections must not count (nor evict again) one already on its way out.
        del self._connections[handler]
        conn.transport.abort()

    async def run(self) -> None:
        while True:
            await self._clock.sleep(self.bounds.sweep_interval)
            self.sweep()

    def middleware(self) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
        """Marks a request in progress while its handler runs."""

        @web.middleware
        async def in_progress(request: web.Request, handler: Handler) -> web.StreamResponse:
            self.handling(request.protocol, True)
            try:
                return await handler(request)
            finally:
                self.handling(request.protocol, False)

        return in_progress


class GuardedSite(web.TCPSite):
    """A TCP site whose connections the guard bounds."""

    def __init__(
        self, runner: web.BaseRunner, host: str, port: int, guard: ConnectionGuard, ssl_context: ssl.SSLContext | None
    ) -> None:
        super().__init__(runner, host, port, ssl_context=ssl_context)
        self._guard = guard

    async def start(self) -> None:
        await web.BaseSite.start(self)
        server = self._runner.server
        assert server is not None
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self._guard.wrap(server), self._host, self._port, ssl=self._ssl_context, backlog=self._backlog
        )
        sockets = self._server.sockets
        self._bound_port = sockets[0].getsockname()[1] if sockets else self._port
