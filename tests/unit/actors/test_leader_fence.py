"""The write fence of leader election: no write leaves a replica whose lease is not fresh."""

from __future__ import annotations

from typing import cast

import pytest

from actors.client import KubeClient, WriteWithheld
from actors.manager.leader import LeaderElector
from tests.support.clock import FakeClock
from tests.support.fake_kube import FakeKube


def elector(clock: FakeClock) -> LeaderElector:
    return LeaderElector(
        cast(KubeClient, FakeKube()),
        "ns",
        "lease",
        "me",
        lease_duration=15.0,
        renew_deadline=10.0,
        retry_period=2.0,
        clock=clock,
    )


async def test_writes_pass_only_within_the_renew_deadline_of_the_last_renewal() -> None:
    clock = FakeClock()
    leader = elector(clock)
    with pytest.raises(WriteWithheld):  # not leading yet: nothing but the lease itself is written
        leader.fence("PATCH", "instances.core.openeverest.io/v1alpha1")
    leader.fence("PUT", "leases.coordination.k8s.io/v1")
    await leader.acquire()
    leader.fence("PATCH", "instances.core.openeverest.io/v1alpha1")
    await clock.advance(9.9)
    leader.fence("PUT", "instances.core.openeverest.io/v1alpha1/status")
    await clock.advance(0.2)  # paused past the renew deadline (SIGSTOP, a frozen VM)
    with pytest.raises(WriteWithheld) as info:
        leader.fence("PATCH", "llminferenceservices.serving.kserve.io/v1alpha2")
    assert "lease ns/lease not renewed within 10 s" in str(info.value)
    # The lease's own renewal, and the reviews a standby's /validate and /metrics make, still pass.
    leader.fence("PUT", "leases.coordination.k8s.io/v1")
    leader.fence("POST", "tokenreviews.authentication.k8s.io/v1")
    leader.fence("POST", "subjectaccessreviews.authorization.k8s.io/v1")
