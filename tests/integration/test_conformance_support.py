"""Shared pieces of the conformance suite (test_conformance_*.py). No tests here.

- `inventory` lists every object carrying our provider label, the way the runtime's informers see
  them; `convergence` is the end state every case must reach: Synced and Valid for the current
  generation, every desired object present, ours and as rendered, and nothing else of ours;
- `ProviderProcess` runs the real `provider-kserve run` as a child process, to be SIGKILLed;
- `TcpProxy` sits between the provider and the API server, so a test can partition the provider
  from a control plane that keeps serving everyone else.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import yaml

from actors.client import KubeClient
from actors.client.known_resources import INSTANCES, SECRETS
from actors.contract import LABEL_INSTANCE, LABEL_PROVIDER, is_owned_by
from actors.interface import KubeObject, Resource
from provider.kserve import KServeProvider
from provider.model.names import PROVIDER_NAME
from provider.model.settings import ProviderSettings
from provider.topologies.protocol import Catalogs

PROVIDER_BIN = Path(sys.executable).parent / "provider-kserve"
SELECTOR = f"{LABEL_PROVIDER}={PROVIDER_NAME}"
# The chart setting that adds the model-puller ServiceAccount: one more object per Instance.
HF_ENV = {"HF_TOKEN_SECRET_NAME": "hf-token"}


def kserve_provider(**settings: Any) -> KServeProvider:
    return KServeProvider(ProviderSettings(**settings))


# What a process started with HF_ENV renders.
HF_PROVIDER = kserve_provider(hf_token_secret_name="hf-token")


OWNED: tuple[Resource, ...] = tuple(kserve_provider().owned_resources())


# -- reading the cluster --------------------------------------------------------------------------


async def inventory(kube: KubeClient, namespace: str) -> list[KubeObject]:
    """Every object with our provider label in `namespace`, each with its kind filled in."""
    out: list[KubeObject] = []
    for res in (*OWNED, SECRETS):
        items, _ = await kube.list_all(res, namespace, label_selector=SELECTOR)
        out += [{**item, "kind": res.kind} for item in items]
    return out


def census(objects: Iterable[KubeObject]) -> Counter[tuple[str, str, str]]:
    """How many objects per (owning Instance label, kind, name): any count above 1 is a duplicate."""
    return Counter(
        ((o["metadata"].get("labels") or {}).get(LABEL_INSTANCE, ""), o["kind"], o["metadata"]["name"]) for o in objects
    )


def kinds_of(objects: Iterable[KubeObject], instance: str) -> Counter[str]:
    return Counter(o["kind"] for o in objects if (o["metadata"].get("labels") or {}).get(LABEL_INSTANCE) == instance)


def condition(obj: KubeObject | None, type_: str) -> dict[str, Any] | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return dict(cond)
    return None


def contains(live: Any, desired: Any) -> bool:
    """`desired` is a subset of `live`: every field we set has our value (the API server may add
    defaults around it)."""
    if isinstance(desired, dict):
        return isinstance(live, dict) and all(k in live and contains(live[k], v) for k, v in desired.items())
    if isinstance(desired, list):
        return isinstance(live, list) and len(live) == len(desired) and all(map(contains, live, desired))
    return bool(live == desired)


def matches(live: KubeObject, desired: KubeObject) -> bool:
    """Every field we render (spec, top-level fields like a ServiceAccount's, our labels and
    annotations) is in the live object with our value."""
    body = {k: v for k, v in desired.items() if k not in ("apiVersion", "kind", "metadata")}
    meta = {k: v for k, v in desired.get("metadata", {}).items() if k in ("labels", "annotations")}
    return contains(live, body) and contains(live.get("metadata"), meta)


@dataclass
class Convergence:
    """Why an Instance is not converged yet (empty `problems` when it is)."""

    problems: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return not self.problems


async def convergence(
    kube: KubeClient, namespace: str, name: str, provider: KServeProvider | None = None
) -> Convergence:
    result = Convergence()
    instance = await kube.get(INSTANCES, namespace, name)
    if instance is None:
        result.problems.append("no Instance")
        return result
    generation = instance["metadata"].get("generation")
    for type_ in ("Valid", "Synced"):
        cond = condition(instance, type_)
        if cond is None or cond.get("status") != "True" or cond.get("observedGeneration") != generation:
            result.problems.append(f"{type_} is {cond}")
    desired = (provider or kserve_provider()).render(instance, catalogs=Catalogs())
    wanted = {(o["kind"], o["metadata"]["name"]) for o in desired}
    by_kind = {r.kind: r for r in OWNED}
    for obj in desired:
        live = await kube.get(by_kind[obj["kind"]], namespace, obj["metadata"]["name"])
        if live is None:
            result.problems.append(f"{obj['kind']}/{obj['metadata']['name']} missing")
        elif not is_owned_by(live, instance):
            result.problems.append(f"{obj['kind']}/{obj['metadata']['name']} not owned")
        elif not matches(live, obj):
            result.problems.append(f"{obj['kind']}/{obj['metadata']['name']} differs from what we render")
    mine = [o for o in await inventory(kube, namespace) if kinds_of([o], name)]
    extra = {(o["kind"], o["metadata"]["name"]) for o in mine if o["kind"] != "Secret"} - wanted
    if extra:
        result.problems.append(f"not desired but present: {sorted(extra)}")
    return result


async def wait_converged(
    kube: KubeClient,
    namespace: str,
    names: Iterable[str],
    timeout: float = 60.0,
    provider: KServeProvider | None = None,
) -> float:
    """Seconds until every named Instance has converged; fails with what is still wrong."""
    started = time.monotonic()
    pending = list(names)
    problems: dict[str, list[str]] = {}
    while pending:
        for name in list(pending):
            result = await convergence(kube, namespace, name, provider)
            if result:
                pending.remove(name)
                problems.pop(name, None)
            else:
                problems[name] = result.problems
        if pending and time.monotonic() - started > timeout:
            raise AssertionError(f"not converged after {timeout:.0f} s: {problems}")
        if pending:
            await anyio.sleep(0.2)
    return time.monotonic() - started


# -- the provider as a process ----------------------------------------------------------------------


@dataclass
class ProviderProcess:
    """`provider-kserve run` against `kubeconfig`, watching one namespace, logging to `log`."""

    kubeconfig: Path
    namespace: str
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    # More `run` flags, after the defaults (so a later `--health-port N` wins).
    args: list[str] = field(default_factory=list)
    process: asyncio.subprocess.Process | None = None
    starts: int = 0

    async def start(self) -> None:
        assert self.process is None, "already running"
        env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
        env.update(self.env)
        with self.log.open("ab") as sink:
            self.process = await asyncio.create_subprocess_exec(
                str(PROVIDER_BIN),
                "run",
                "--kubeconfig",
                str(self.kubeconfig),
                "--no-leader-elect",
                "--namespace",
                self.namespace,
                "--metrics-port",
                "0",
                "--health-port",
                "0",
                "--validation-port",
                "0",
                *self.args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=sink,
                stderr=asyncio.subprocess.STDOUT,
                env=env,
            )
        self.starts += 1

    async def kill(self) -> int:
        """SIGKILL: no cleanup, no last status write, sockets dropped mid-request."""
        process, self.process = self.process, None
        assert process is not None, "not running"
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGKILL)
        return await process.wait()

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            await self.kill()
        self.process = None

    def alive(self) -> bool:
        return self.process is not None and self.process.returncode is None


def write_kubeconfig(controlplane: Any, path: Path, server: str | None = None) -> Path:
    """The admin kubeconfig, optionally pointing at another address (a proxy)."""
    controlplane.write_kubeconfig(path, controlplane.admin_token, user="admin")
    if server is not None:
        config = yaml.safe_load(path.read_text())
        config["clusters"][0]["cluster"]["server"] = server
        path.write_text(yaml.safe_dump(config))
    return path


# -- a network partition ---------------------------------------------------------------------------


@dataclass
class TcpProxy:
    """Forwards 127.0.0.1:<port> to the API server. `cut()` drops every open connection and
    refuses new ones (closing them on accept) until `heal()`: the provider behind it sees the
    API server vanish while it keeps serving everyone else."""

    target_port: int
    port: int = 0
    connected: bool = True
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
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self._pipes.discard(writer)
            writer.transport.abort()
