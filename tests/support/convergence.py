"""The end state every conformance case must reach, read from the cluster as the runtime sees it.

`inventory` lists every object carrying our provider label (as the runtime's informers select
them); `convergence` says why an Instance has not converged yet: Synced and Valid for the current
generation, every desired object present, ours and as rendered, and nothing else of ours.
`wait_converged` waits for it. `kserve_provider` is the real provider that renders what is desired.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from actors.client import KubeClient
from actors.client.known_resources import INSTANCES, SECRETS
from actors.contract import LABEL_INSTANCE, LABEL_PROVIDER, is_owned_by
from actors.interface import KubeObject, Resource
from provider.kserve import KServeProvider
from provider.model.catalog import Catalogs
from provider.model.names import PROVIDER_NAME
from provider.model.settings import ProviderSettings
from tests.support.waiting import NotYet, wait_for

SELECTOR = f"{LABEL_PROVIDER}={PROVIDER_NAME}"


def kserve_provider(**settings: Any) -> KServeProvider:
    return KServeProvider(ProviderSettings(**settings))


OWNED: tuple[Resource, ...] = tuple(kserve_provider().owned_resources())


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
    kserve = provider or kserve_provider()
    desired = kserve.render(instance, catalogs=Catalogs())
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
    # Ours: our labels for this Instance and a name the provider derives for it. Objects labelled
    # like ours under another name are someone else's, which the provider leaves alone.
    mine = [o for o in await inventory(kube, namespace) if kinds_of([o], name)]
    derived = {
        (o["kind"], o["metadata"]["name"])
        for o in mine
        if o["kind"] != "Secret" and kserve.derives(name, by_kind[o["kind"]], o["metadata"]["name"])
    }
    extra = derived - wanted
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

    async def converged() -> bool | NotYet:
        problems: dict[str, list[str]] = {}
        for name in list(pending):
            result = await convergence(kube, namespace, name, provider)
            if result:
                pending.remove(name)  # converged stays converged: not read again
            else:
                problems[name] = result.problems
        return not pending or NotYet(problems)

    await wait_for(converged, what=f"{len(pending)} Instances converged", timeout=timeout, interval=0.2)
    return time.monotonic() - started
