"""The node's iptables chains and rules: listed, guarded, and those added since a record removed.

kube-proxy's and the kubelet's KUBE-* chains, the bridge plugin's CNI-* chains and our own rules
(which carry RULE_COMMENT) are the node's; anything else on the host is left alone.
"""

from __future__ import annotations

import shlex
import shutil

from cluster.host import run

# iptables chains and rules of the node: kube-proxy's and the kubelet's KUBE-*, the bridge
# plugin's CNI-*, and our own rules, which carry this comment.
RULE_COMMENT = "provider-kserve node"
_OUR_CHAIN_PREFIXES = ("KUBE-", "CNI-")
IPTABLES_FAMILIES = ("iptables", "ip6tables")


def iptables_rules(family: str) -> list[str]:
    """`<family>-save` without comments and counters: `*table`, `:chain policy` and `-A` lines."""
    if shutil.which(f"{family}-save") is None:
        return []
    lines = []
    for line in run(f"{family}-save").splitlines():
        if not line or line.startswith("#"):
            continue
        if line.startswith(":"):
            line = line.rsplit(" [", 1)[0]
        lines.append(line)
    return lines


def _ours(text: str) -> bool:
    return RULE_COMMENT in text or any(prefix in text for prefix in _OUR_CHAIN_PREFIXES)


def _by_table(lines: list[str]) -> list[tuple[str, str]]:
    """(table, line) for each chain and rule line of an iptables_rules() listing."""
    table, out = "", []
    for line in lines:
        if line.startswith("*"):
            table = line[1:]
        elif line.startswith((":", "-A ")):
            out.append((table, line))
    return out


def remove_new_iptables(before: dict[str, list[str]]) -> None:
    """Delete the rules and chains of ours (KUBE-*, CNI-*, our comment) added since `before`."""
    for family in IPTABLES_FAMILIES:
        old = set(_by_table(before.get(family, [])))
        rules: list[tuple[str, str]] = []
        chains: list[tuple[str, str]] = []
        for table, line in _by_table(iptables_rules(family)):
            if (table, line) in old:
                continue
            if line.startswith("-A ") and _ours(line):
                rules.append((table, line))
            elif line.startswith(":") and line[1:].startswith(_OUR_CHAIN_PREFIXES):
                chains.append((table, line[1:].split()[0]))
        for table, line in reversed(rules):
            run(family, "-w", "-t", table, "-D", *shlex.split(line)[1:], check=False)
        for flag in ("-F", "-X"):
            for table, chain in chains:
                run(family, "-w", "-t", table, flag, chain, check=False)


def remove_new_empty_tables(before: dict[str, list[str]]) -> None:
    """Delete the tables iptables created on first use (with nftables underneath, `filter`, `nat`
    and `mangle` exist only once something touched them) when nothing is left in them."""
    for family, nft_family in zip(IPTABLES_FAMILIES, ("ip", "ip6"), strict=True):
        existed = {line[1:] for line in before.get(family, []) if line.startswith("*")}
        table, empty = "", dict[str, bool]()
        for line in iptables_rules(family):
            if line.startswith("*"):
                table = line[1:]
                empty[table] = True
            elif line.startswith("-A ") or (line.startswith(":") and not line.endswith(" ACCEPT")):
                empty[table] = False  # a rule, a chain of its own ("-" policy) or a changed policy
        for name, is_empty in empty.items():
            if is_empty and name not in existed and shutil.which("nft"):
                run("nft", "delete", "table", nft_family, name, check=False)


def add_forward_guard(bridge: str) -> None:
    """Drop whatever pods send to anywhere but the bridge: nothing a pod does leaves this host."""
    for family in IPTABLES_FAMILIES:
        if shutil.which(family):
            run(family, "-w", "-I", "FORWARD", "-i", bridge, "!", "-o", bridge,
                "-m", "comment", "--comment", RULE_COMMENT, "-j", "DROP")  # fmt: skip
