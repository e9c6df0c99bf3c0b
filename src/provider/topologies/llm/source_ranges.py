"""`service.loadBalancerService.sourceRanges` → `spec.loadBalancerSourceRanges`.

Normalised like the Go runtime does (a bare IPv4 address gets /32, a bare IPv6 address /128), but
an entry that is neither an address nor a CIDR is an error here: Go passed it through and the API
server then rejected the whole Service at apply time.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from actors import ValidationFailed
from provider.rules.quote import quote


def normalized_source_ranges(ranges: Sequence[str], prefix: str) -> tuple[str, ...]:
    out: list[str] = []
    for i, entry in enumerate(ranges):
        text = entry.strip()
        try:
            if "/" in text:
                ipaddress.ip_network(text, strict=False)
                out.append(text)
            else:
                address = ipaddress.ip_address(text)
                out.append(f"{text}/{address.max_prefixlen}")
        except ValueError:
            raise ValidationFailed(f"{prefix}[{i}]: {quote(entry)} is not an IP address or CIDR") from None
    return tuple(out)
