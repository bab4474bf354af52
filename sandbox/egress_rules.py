"""Where code in a container may connect, once its `network_policy` allows the domain: the
container egress rules every egress proxy applies (`sandbox/egress_proxy.py`), and the API
when it checks a domain at the door.

- Public addresses, on ports 80 and 443.
- What the operator opens with `SANDBOX_EGRESS_ALLOWLIST`, comma-separated: a host name, an
  address or a network, each on ports 80 and 443, or on the port it names (`host:port`,
  `10.0.0.0/8:3141`, `[fd00::/8]:8080`; `:*` for any port). Empty by default, in `dev` too.
  It is not `EGRESS_ALLOWLIST` (the MCP servers and webhooks of tenants, which the operator
  trusts more than every tenant's code), nor does either open the other.
- Never, whatever the lists say: the cloud metadata addresses (169.254.169.254,
  fd00:ec2::254), and this deployment's own services (Temporal's frontend and UI, the store,
  the API, the worker's health and metrics ports: `closing`); one listening on the loopback or
  on every address is closed on every address of this host.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field

from access.egress import Address, EgressRefusedError, Network, is_public

DEFAULT_PORTS = frozenset({80, 443})
METADATA = (ipaddress.ip_network("169.254.169.254/32"), ipaddress.ip_network("fd00:ec2::254/128"))
ANY_PORT = "*"


class SandboxEgressError(ValueError):
    """An entry of `SANDBOX_EGRESS_ALLOWLIST` that cannot be read: its message names it."""


def _plain(address: Address) -> Address:
    """An IPv6 address that carries an IPv4 one, as that one."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


@dataclass(frozen=True)
class Opening:
    """One entry of `SANDBOX_EGRESS_ALLOWLIST`."""

    host: str | None = None
    network: Network | None = None
    ports: frozenset[int] | None = DEFAULT_PORTS
    """None: any port."""

    def opens(self, host: str, address: Address, port: int) -> bool:
        if self.ports is not None and port not in self.ports:
            return False
        if self.host is not None:
            return host.lower().rstrip(".") == self.host
        return self.network is not None and _plain(address) in self.network

    @classmethod
    def parse(cls, entry: str) -> Opening:
        target, ports = _split_port(entry)
        try:
            return cls(network=ipaddress.ip_network(target, strict=False), ports=ports)
        except ValueError:
            pass
        name = target.lower().rstrip(".")
        if not name or any(character in name for character in "/[]: "):
            raise SandboxEgressError(f"SANDBOX_EGRESS_ALLOWLIST: {entry!r} is not a host, an address or a network")
        return cls(host=name, ports=ports)


def _split_port(entry: str) -> tuple[str, frozenset[int] | None]:
    """`target` or `target:port` (an IPv6 target in brackets when it has a port)."""
    if entry.startswith("["):
        target, bracket, rest = entry[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise SandboxEgressError(f"SANDBOX_EGRESS_ALLOWLIST: {entry!r} has no closing bracket")
        port = rest[1:] if rest else None
    elif entry.count(":") == 1:
        target, _, port = entry.partition(":")
    else:
        target, port = entry, None  # a host, an IPv4 address or network, or a bare IPv6 one
    if port is None:
        return target, DEFAULT_PORTS
    if port == ANY_PORT:
        return target, None
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise SandboxEgressError(f"SANDBOX_EGRESS_ALLOWLIST: {entry!r} names no port between 1 and 65535")
    return target, frozenset({int(port)})


@dataclass(frozen=True)
class Closed:
    """A service of this deployment's: an address (or, `network` None, every address of this
    host) on one port."""

    network: Network | None
    port: int

    def closes(self, address: Address, port: int) -> bool:
        if port != self.port:
            return False
        if self.network is None:
            return _is_this_host(address)
        return _plain(address) in self.network


def _is_this_host(address: Address) -> bool:
    """Whether `address` is one of this machine's own (a socket can be bound to it)."""
    address = _plain(address)
    if address.is_loopback or address.is_unspecified:
        return True
    family = socket.AF_INET if address.version == 4 else socket.AF_INET6
    with contextlib.suppress(OSError), socket.socket(family, socket.SOCK_DGRAM) as probe:
        probe.bind((str(address), 0))
        return True
    return False


@dataclass(frozen=True)
class SandboxEgress:
    openings: tuple[Opening, ...] = ()
    closed: tuple[Closed, ...] = field(default_factory=tuple)

    @classmethod
    def parse(cls, allowlist: str) -> SandboxEgress:
        """`SANDBOX_EGRESS_ALLOWLIST` (SandboxEgressError names an entry it cannot read)."""
        entries = [entry.strip() for entry in allowlist.split(",") if entry.strip()]
        return cls(tuple(Opening.parse(entry) for entry in entries if entry.lower() != "none"))

    def closing(self, endpoints: Iterable[str]) -> SandboxEgress:
        """These rules, with this deployment's own services (`host:port` each) closed; a name
        is resolved now (the deployment's own names do not move while it runs)."""
        closed = list(self.closed)
        for endpoint in endpoints:
            host, _, port = endpoint.rpartition(":")
            host = host.strip("[]")
            if not port.isdigit():
                continue
            try:
                found = socket.getaddrinfo(host or "0.0.0.0", int(port), type=socket.SOCK_STREAM)
            except (OSError, UnicodeError):
                continue
            for *_, sockaddr in found:
                address = _plain(ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0]))
                local = address.is_loopback or address.is_unspecified
                closed.append(Closed(None if local else ipaddress.ip_network(address), int(port)))
        return SandboxEgress(self.openings, tuple(dict.fromkeys(closed)))

    def refusal(self, host: str, address: Address, port: int) -> str | None:
        """Why code may not connect to `address` (which `host` resolved to) on `port`; None: it may."""
        plain = _plain(address)
        if any(plain in network for network in METADATA):
            return "a cloud metadata address"
        if any(closed.closes(address, port) for closed in self.closed):
            return "one of this server's own services"
        if any(opening.opens(host, address, port) for opening in self.openings):
            return None
        if not is_public(address):
            return "not a public address (SANDBOX_EGRESS_ALLOWLIST opens none)"
        if port not in DEFAULT_PORTS:
            return f"port {port} (only 80 and 443, unless SANDBOX_EGRESS_ALLOWLIST names another)"
        return None

    async def addresses(self, host: str, port: int) -> list[str]:
        """The addresses of `host` code may reach on `port`; EgressRefusedError says why not
        (one refused address refuses the host: DNS may answer either next time)."""
        try:
            found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            raise EgressRefusedError(f"{host} does not resolve") from None
        allowed: list[str] = []
        for *_, sockaddr in found:
            address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
            why = self.refusal(host, address, port)
            if why is not None:
                raise EgressRefusedError(f"{host}:{port} is {why}")
            allowed.append(str(address))
        if not allowed:
            raise EgressRefusedError(f"{host} does not resolve")
        return allowed

    def to_json(self) -> str:
        return json.dumps(
            {
                "open": [
                    [opening.host, None if opening.network is None else str(opening.network)]
                    + [None if opening.ports is None else sorted(opening.ports)]
                    for opening in self.openings
                ],
                "closed": [[None if each.network is None else str(each.network), each.port] for each in self.closed],
            }
        )

    @classmethod
    def from_json(cls, text: str) -> SandboxEgress:
        said = json.loads(text)
        openings = tuple(
            Opening(
                host,
                None if network is None else ipaddress.ip_network(network),
                None if ports is None else frozenset(ports),
            )
            for host, network, ports in said["open"]
        )
        closed = tuple(
            Closed(None if network is None else ipaddress.ip_network(network), port) for network, port in said["closed"]
        )
        return cls(openings, closed)
