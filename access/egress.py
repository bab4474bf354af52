"""The egress guard: which addresses outbound connections (MCP servers, webhooks) may reach.

Every host is resolved and each address it resolves to is checked: loopback, private,
link-local, shared (CGNAT), multicast, unspecified and reserved addresses are refused, in
every spelling (`127.1`, `2130706433`, `0x7f.1` resolve to 127.0.0.1; `::ffff:10.0.0.1`,
6to4, Teredo and NAT64 addresses are checked as the IPv4 address they carry), unless
`EGRESS_ALLOWLIST` names the host, the address or a network holding it.

The check runs twice: when a request names a server (a 400 that says nothing about the
network: not whether the host resolved, nor what it resolved to), and again at connect time
inside the HTTP client's network backend, which connects to the very address it checked (so
DNS that changes between the two checks, and redirects, get nowhere).
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket
import ssl
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpcore2
import httpx2

from models.errors import DurableResponsesError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

LOOPBACK_ALLOWLIST = "localhost,127.0.0.0/8,::1"
"""What `dev` may reach unless EGRESS_ALLOWLIST says otherwise: this machine."""
NOTHING = "none"
SHARED_ADDRESS_SPACE = ipaddress.ip_network("100.64.0.0/10")
NAT64 = ipaddress.ip_network("64:ff9b::/96")
"""IPv6 addresses a NAT64 gateway turns into the IPv4 address in their last 32 bits."""


class EgressRefusedError(DurableResponsesError):
    """An outbound connection to an address the egress policy does not allow."""


def is_public(address: Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour or (address.teredo[1] if address.teredo else None)
        if embedded is None and address in NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            return is_public(embedded)
    if isinstance(address, ipaddress.IPv4Address) and address in SHARED_ADDRESS_SPACE:
        return False
    return not (
        address.is_loopback
        or address.is_private
        or address.is_link_local
        or address.is_multicast
        or address.is_unspecified
        or address.is_reserved
        or (isinstance(address, ipaddress.IPv6Address) and address.is_site_local)
    )


@dataclass(frozen=True)
class EgressPolicy:
    hosts: frozenset[str] = frozenset()
    networks: tuple[Network, ...] = field(default_factory=tuple)

    @classmethod
    def parse(cls, allowlist: str) -> EgressPolicy:
        """`EGRESS_ALLOWLIST`: comma-separated host names, addresses and networks (`none`: nothing)."""
        hosts, networks = set(), []
        for entry in (part.strip() for part in allowlist.split(",")):
            if not entry or entry.lower() == NOTHING:
                continue
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                hosts.add(entry.lower().rstrip("."))
        return cls(frozenset(hosts), tuple(networks))

    def allows(self, host: str, address: Address) -> bool:
        return (
            is_public(address)
            or host.lower().rstrip(".") in self.hosts
            or any(address in network for network in self.networks)
        )

    async def addresses(self, host: str, port: int) -> list[str]:
        """The addresses `host` resolves to that may be reached; EgressRefusedError if none
        (also when it does not resolve: a refusal says nothing about the network)."""
        try:
            found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            raise EgressRefusedError(host) from None
        allowed = []
        for *_, sockaddr in found:
            address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
            if not self.allows(host, address):
                raise EgressRefusedError(host)  # one refused address refuses the host
            allowed.append(str(address))
        if not allowed:
            raise EgressRefusedError(host)
        return allowed

    async def check_url(self, url: str) -> None:
        parts = urlsplit(url)
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise EgressRefusedError(url) from None
        if not parts.hostname:
            raise EgressRefusedError(url)
        await self.addresses(parts.hostname, port)


class GuardedNetworkBackend(httpcore2.AsyncNetworkBackend):
    """httpcore2's own backend, connecting only to addresses the policy allows: the host is
    resolved here, checked, and the connection made to the checked address (TLS still
    verifies the certificate against the host name, which httpcore2 passes separately)."""

    def __init__(self, policy: EgressPolicy) -> None:
        self.policy = policy
        self.inner = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        addresses = await self.policy.addresses(host, port)
        return await self.inner.connect_tcp(
            addresses[0], port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.AsyncNetworkStream:
        raise EgressRefusedError(path)

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class ReplyTooLargeError(DurableResponsesError):
    """A reply from a URL a tenant chose grew past what this server reads of one."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the reply was larger than {limit} bytes")
        self.limit = limit


class _BoundedBody(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, limit: int) -> None:
        self.inner = inner
        self.limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self.inner:
            seen += len(chunk)
            if seen > self.limit:
                raise ReplyTooLargeError(self.limit)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class BoundedTransport(httpx2.AsyncBaseTransport):
    """Stops reading a reply body at `limit` bytes (`ReplyTooLargeError`), so an endless
    reply costs that much memory at most. Event streams are left alone: they are long-lived
    by design, and their reader bounds each event instead."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, limit: int) -> None:
        self.inner = inner
        self.limit = limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            return response
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.limit:
            await response.aclose()
            raise ReplyTooLargeError(self.limit)
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            extensions=response.extensions,
            stream=_BoundedBody(response.stream, self.limit),
            request=request,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


@functools.cache
def verifying_ssl_context() -> ssl.SSLContext:
    """One TLS context for every outgoing client, verifying as httpx's default does
    (`SSL_CERT_FILE` and `SSL_CERT_DIR` included). Building one loads the CA bundle: ~50 ms
    of CPU, which every MCP listing and call paid twice before they shared this one."""
    return httpx2.create_ssl_context()


def guarded_http_client(
    policy: EgressPolicy, *, max_reply_bytes: int | None = None, **options: Any
) -> httpx2.AsyncClient:
    """An httpx2 client whose every connection (redirects included) passes the policy;
    `max_reply_bytes`: the most it reads of one reply body (`BoundedTransport`)."""
    context = verifying_ssl_context()
    transport = httpx2.AsyncHTTPTransport(verify=context, trust_env=False)
    # httpx2's transport builds its connection pool without a way to pass a network backend;
    # the pool is rebuilt with the guarded one (the tests prove the guard holds).
    transport._pool = httpcore2.AsyncConnectionPool(  # noqa: SLF001
        ssl_context=context,
        max_connections=100,
        max_keepalive_connections=20,
        keepalive_expiry=5.0,
        network_backend=GuardedNetworkBackend(policy),
    )
    outer: httpx2.AsyncBaseTransport = (
        transport if max_reply_bytes is None else BoundedTransport(transport, max_reply_bytes)
    )
    return httpx2.AsyncClient(transport=outer, trust_env=False, **options)
