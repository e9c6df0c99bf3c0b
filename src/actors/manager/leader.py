"""Leader election through a coordination.k8s.io/v1 Lease (client-go's algorithm, simplified).

Expiry is judged by when *we* last saw the lease record change, not by the holder's timestamps,
so clock skew between replicas cannot make two of them leaders. Losing the lease is fatal: the
caller stops reconciling (the process exits and its Deployment restarts it as a standby).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import structlog

from actors.client import ApiError, KubeClient, WriteWithheld
from actors.client.known_resources import LEASES
from actors.queue.clock import Clock, MonotonicClock

log = structlog.get_logger(__name__)


# Requests the fence lets through whatever the lease says: the lease's own renewal and release, and
# the token and access reviews a standby's /validate and /metrics need.
_UNFENCED = (
    f"{LEASES.plural}.{LEASES.group}/",
    "tokenreviews.authentication.k8s.io/",
    "subjectaccessreviews.authorization.k8s.io/",
)


class LostLeadership(Exception):
    pass


def _micro_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class LeaderElector:
    client: KubeClient
    namespace: str
    name: str
    identity: str
    lease_duration: float
    renew_deadline: float
    retry_period: float
    clock: Clock = field(default_factory=MonotonicClock)

    def __post_init__(self) -> None:
        self._observed_record: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self.is_leader = False
        # When the last successful renewal was sent: the lease holds from then on for its duration.
        self._renewed_at = -float("inf")

    async def acquire(self) -> None:
        """Return once we hold the lease."""
        while not await self._renew():
            await self.clock.sleep(self.retry_period)
        self.is_leader = True
        log.info("became leader", lease=f"{self.namespace}/{self.name}", identity=self.identity)

    async def hold(self) -> None:
        """Renew until cancelled; raise LostLeadership when a renewal deadline passes."""
        while True:
            await self.clock.sleep(self.retry_period)
            try:
                await self._renew()
            except Exception as err:  # network errors count against the deadline, not crash
                log.warning("lease renewal failed", error=repr(err))
            if not self.leading():
                self.is_leader = False
                raise LostLeadership(f"could not renew lease {self.namespace}/{self.name}")

    def leading(self) -> bool:
        """Whether the lease is ours and was renewed within the renew deadline. A process that was
        stopped (SIGSTOP, a frozen VM) longer than that may have been replaced meanwhile."""
        return self.is_leader and self.clock.now() - self._renewed_at <= self.renew_deadline

    def fence(self, method: str, resource: str) -> None:
        """Before every write: withhold it unless we are leading. Checked per write, not only in the
        renew loop, because a process resumed after a pause runs its pending work before that loop
        notices the lease is gone. The lease itself and the reviews /validate asks for are exempt."""
        if resource.startswith(_UNFENCED) or self.leading():
            return
        raise WriteWithheld(
            f"{method} {resource} withheld: lease {self.namespace}/{self.name} not renewed within "
            f"{self.renew_deadline:.0f} s (another replica may lead now)"
        )

    async def _renew(self) -> bool:
        sent_at = self.clock.now()
        renewed = await self._try_acquire_or_renew()
        if renewed:
            self._renewed_at = sent_at
        return renewed

    async def release(self) -> None:
        """Hand the lease over promptly on a clean shutdown."""
        if not self.is_leader:
            return
        lease = await self.client.get(LEASES, self.namespace, self.name)
        if lease and lease.get("spec", {}).get("holderIdentity") == self.identity:
            lease["spec"]["holderIdentity"] = None
            lease["spec"]["leaseDurationSeconds"] = 1
            with contextlib.suppress(ApiError):  # best effort: the lease expires anyway
                await self.client.replace(LEASES, lease)
        self.is_leader = False

    async def _try_acquire_or_renew(self) -> bool:
        now = _micro_time()
        lease = await self.client.get(LEASES, self.namespace, self.name)
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.lease_duration),
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": 0,
        }
        if lease is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": spec,
            }
            try:
                await self.client.create(LEASES, body)
                return True
            except ApiError as err:
                if err.conflict:
                    return False
                raise
        current = lease.get("spec") or {}
        record = (current.get("holderIdentity"), current.get("renewTime"), current.get("leaseTransitions"))
        if record != self._observed_record:
            self._observed_record = record
            self._observed_at = self.clock.now()
        holder = current.get("holderIdentity")
        duration = float(current.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and self.clock.now() - self._observed_at < duration:
            return False
        if holder == self.identity:
            spec["acquireTime"] = current.get("acquireTime", now)
            spec["leaseTransitions"] = current.get("leaseTransitions", 0)
        else:
            spec["leaseTransitions"] = int(current.get("leaseTransitions") or 0) + 1
        lease["spec"] = spec
        try:
            await self.client.replace(LEASES, lease)  # resourceVersion in lease: optimistic
        except ApiError as err:
            if err.conflict:
                return False
            raise
        return True
