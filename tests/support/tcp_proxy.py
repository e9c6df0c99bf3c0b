"""A network partition: a TCP proxy between the provider and the API server that a test can cut, or
slow down."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class TcpProxy:
    """Forwards 127.0.0.1:<port> to the API server. `cut()` drops every open connection and
    refuses new ones (closing them on accept) until `heal()`: the provider behind it sees the
    API server vanish while it keeps serving everyone else."""

    target_port: int
    port: int = 0
    # Seconds each chunk waits before it is passed on, both ways (a long network).
    delay: float = 0.0
    connected: bool = True
    # Called as each connection is accepted, before a byte of it is passed on.
    on_accept: Callable[[], None] | None = None
    _server: asyncio.Server | None = None
    _pipes: set[asyncio.StreamWriter] = field(default_factory=set)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def cut(self) -> None:
        self.connected = False
        for writer in list(self._pipes):
            writer.transport.abort()
        self._pipes.clear()

    def heal(self) -> None:
        self.connected = True

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.on_accept is not None:
            self.on_accept()
        if not self.connected:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self._pipes.update((writer, up_writer))
        await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                if self.delay:
                    await asyncio.sleep(self.delay)
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self._pipes.discard(writer)
            writer.transport.abort()
