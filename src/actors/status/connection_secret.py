"""The `<instance>-conn` Secret the OpenEverest contract requires, written like any derived object.

It goes through the Applier, so it is ours in the same way (labels, controller reference), a write
is skipped when nothing changed, and a copy deleted or edited by hand is restored at the next pass
(the runtime watches its Secrets). A Secret of that name that someone else created is never
written over: the Instance says so in its ConnectionDetailsReady condition instead.
"""

from __future__ import annotations

import base64

from actors.apply.applier import Applier, SyncResult
from actors.apply.conflicts import NameClash
from actors.contract import connection_secret_name
from actors.interface import ConnectionDetails, KubeObject


async def connection_secret(
    applier: Applier, instance: KubeObject, details: ConnectionDetails | None, result: SyncResult
) -> tuple[str | None, str | None]:
    """(the Secret's name for status.connectionSecretRef, why it could not be written)."""
    if details is None or details.is_empty():
        # Keep a Secret from an earlier pass (contract: it goes with the Instance).
        existing: str | None = (instance.get("status") or {}).get("connectionSecretRef", {}).get("name")
        return existing, None
    name = connection_secret_name(instance["metadata"]["name"])
    data = {k: base64.b64encode(v.encode()).decode() for k, v in details.secret_data().items()}
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "type": "Opaque", "data": data}
    try:
        await applier.apply(instance, secret, result=result)
    except NameClash as clash:
        return None, str(clash)
    return name, None
