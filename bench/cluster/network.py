"""The bed's network: one Linux network namespace a node, each joined by a veth pair to a
bridge in a hub namespace of its own, each node with one address on the bed's /24 and no
other route: no default route, no NAT, so nothing a node sends can leave the bridge (the
host's own namespace is not on it either). Faults are nftables rules in a node's namespace:
cut from some peers (either way, or one way), or random loss.

Every namespace's name starts with the bed's prefix, which holds the pid of the process that
made it: a bed whose maker died is taken down by the next one (`sweep_stale`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

PREFIX = "drbed"
TABLE = "bed"
"""The nftables table (family `inet`) the faults live in, in each node's namespace."""


class BedError(Exception):
    """The bed could not be set up or driven."""


def _run(*argv: str, stdin: str | None = None) -> None:
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        raise BedError(f"{' '.join(argv)}: {done.stderr.strip() or done.returncode}")


@dataclass(frozen=True)
class Node:
    name: str
    namespace: str
    address: str

    def command(self, argv: Sequence[str]) -> list[str]:
        """`argv` run inside this node's network namespace, and only that: the host's mounts
        stay its mounts, as on a host of its own (`ip netns exec` would give each process a
        mount namespace of its own, and a killed worker's containers would lose their mounts
        with it, which no real host does)."""
        return ["nsenter", f"--net=/run/netns/{self.namespace}", "--", *argv]


class Network:
    def __init__(self, names: Sequence[str], *, subnet: str = "10.77.0") -> None:
        if len(names) > 200:
            raise BedError("at most 200 nodes")
        self.prefix = f"{PREFIX}{os.getpid()}"
        self.hub = f"{self.prefix}-hub"
        self.subnet = subnet
        self.nodes = {
            name: Node(name, f"{self.prefix}-{name}", f"{subnet}.{index + 2}") for index, name in enumerate(names)
        }

    def up(self) -> Network:
        sweep_stale()
        try:
            _run("ip", "netns", "add", self.hub)
            _run("ip", "-n", self.hub, "link", "add", "br0", "type", "bridge")
            _run("ip", "-n", self.hub, "link", "set", "br0", "up")
            for index, node in enumerate(self.nodes.values()):
                port = f"port{index}"
                _run("ip", "netns", "add", node.namespace)
                _run(
                    "ip", "link", "add", "eth0", "netns", node.namespace, "type", "veth",
                    "peer", "name", port, "netns", self.hub,
                )  # fmt: skip
                _run("ip", "-n", self.hub, "link", "set", port, "master", "br0")
                _run("ip", "-n", self.hub, "link", "set", port, "up")
                _run("ip", "-n", node.namespace, "addr", "add", f"{node.address}/24", "dev", "eth0")
                _run("ip", "-n", node.namespace, "link", "set", "eth0", "up")
                _run("ip", "-n", node.namespace, "link", "set", "lo", "up")
                _run("ip", "netns", "exec", node.namespace, "nft", "-f", "-", stdin=_empty_table())
        except BaseException:
            self.down()
            raise
        return self

    def down(self) -> None:
        """Every namespace of this bed gone (their veths with them)."""
        _remove(namespace for namespace in _namespaces() if namespace.startswith(f"{self.prefix}-"))

    def cut(self, node: str, peers: Iterable[str], *, inbound: bool = True, outbound: bool = True) -> None:
        """`node` hears nothing from `peers` (`inbound`) and sends them nothing (`outbound`)."""
        addresses = ", ".join(self.nodes[peer].address for peer in peers)
        rules = []
        if inbound:
            rules.append(f"add rule inet {TABLE} input ip saddr {{ {addresses} }} drop")
        if outbound:
            rules.append(f"add rule inet {TABLE} output ip daddr {{ {addresses} }} drop")
        self._nft(node, "\n".join(rules))

    def lose(self, node: str, percent: int) -> None:
        """`node` drops `percent` % of the packets it receives from the bridge, at random."""
        if not 0 < percent < 100:
            raise BedError("loss is a percentage between 0 and 100")
        self._nft(node, f'add rule inet {TABLE} input iifname "eth0" numgen random mod 100 < {percent} drop')

    def heal(self, node: str | None = None) -> None:
        """Every fault of `node` (or of every node) gone."""
        for name in [node] if node else list(self.nodes):
            self._nft(name, f"flush chain inet {TABLE} input\nflush chain inet {TABLE} output")

    def _nft(self, node: str, rules: str) -> None:
        if rules:
            _run(*self.nodes[node].command(["nft", "-f", "-"]), stdin=rules + "\n")


def _empty_table() -> str:
    return (
        f"add table inet {TABLE}\n"
        f"add chain inet {TABLE} input {{ type filter hook input priority 0; }}\n"
        f"add chain inet {TABLE} output {{ type filter hook output priority 0; }}\n"
    )


def _namespaces() -> list[str]:
    done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30, check=False)
    return [line.split()[0] for line in done.stdout.splitlines() if line.strip()]


def _remove(namespaces: Iterable[str]) -> None:
    for namespace in namespaces:
        subprocess.run(["ip", "netns", "del", namespace], capture_output=True, timeout=30, check=False)


def sweep_stale() -> None:
    """The namespaces of beds whose makers have died, removed."""
    stale = []
    for namespace in _namespaces():
        owner = namespace.removeprefix(PREFIX).split("-", 1)[0]
        if namespace.startswith(PREFIX) and owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
            stale.append(namespace)
    _remove(stale)


def missing() -> str | None:
    """Why a bed cannot run here, or None: checked by making a two-node one and cutting it."""
    if os.geteuid() != 0:
        return "the bed makes network namespaces: it runs as root"
    for tool, package in (("ip", "iproute2"), ("nft", "nftables"), ("nsenter", "util-linux")):
        if shutil.which(tool) is None:
            return f"`{tool}` is missing (Debian's {package} package)"
    probe = Network(["probe-a", "probe-b"], subnet="10.77.255")
    try:
        probe.up()
        probe.cut("probe-a", ["probe-b"], outbound=False)
        probe.lose("probe-b", 10)
        probe.heal()
    except BedError as error:
        return f"this kernel cannot make the bed: {error}"
    finally:
        probe.down()
    return None
