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

from actors.client import ApiError, KubeClient
from actors.client.known_resources import LEASES
from actors.queue.clock import Clock, MonotonicClock

log = structlog.get_logger("actors.manager.leader")


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

    async def acquire(self) -> None:
        """Return once we hold the lease."""
        while not await self._try_acquire_or_renew():
            await self.clock.sleep(self.retry_period)
        self.is_leader = True
        log.info("became leader", lease=f"{self.namespace}/{self.name}", identity=self.identity)

    async def hold(self) -> None:
        """Renew until cancelled; raise LostLeadership when a renewal deadline passes."""
        last_renewed = self.clock.now()
        while True:
            await self.clock.sleep(self.retry_period)
            try:
                renewed = await self._try_acquire_or_renew()
            except Exception as err:  # network errors count against the deadline, not crash
                log.warning("lease renewal failed", error=repr(err))
                renewed = False
            if renewed:
                last_renewed = self.clock.now()
            elif self.clock.now() - last_renewed > self.renew_deadline:
                self.is_leader = False
                raise LostLeadership(f"could not renew lease {self.namespace}/{self.name}")

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
