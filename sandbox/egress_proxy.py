"""A container's way out, when its `network_policy` allows a list of domains: an HTTP proxy on
a Unix socket in the container's directory, its own process (started like a command's
launcher, so it outlives the worker that started it), which the sandbox reaches through the
socket alone (its network namespace has no other way out; `sandbox/egress_forwarder.py`
listens on its loopback for the programs inside).

    python -m sandbox.egress_proxy SOCKET DOMAIN[,DOMAIN...] [EGRESS_ALLOWLIST]

It tunnels `CONNECT host:port` and forwards plain `http://` requests, only to the listed
domains and their subdomains, and only to addresses the egress guard allows
(`access/egress.py`: public ones, and those `EGRESS_ALLOWLIST` names): a domain that
resolves to a private address is refused, as an MCP server's would be. Anything else is
answered 403. Connections at once and the bytes of a request's head are bounded; an idle
tunnel is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

from access.egress import EgressPolicy, EgressRefusedError

HEAD_BYTES = 16 * 1024
MAX_CONNECTIONS = 64
IDLE_SECONDS = 300.0
CONNECT_SECONDS = 15.0
CHUNK = 64 * 1024


def allowed(host: str, domains: list[str]) -> bool:
    host = host.lower().rstrip(".")
    return any(host == domain or host.endswith(f".{domain}") for domain in domains)


class EgressProxy:
    def __init__(self, domains: list[str], policy: EgressPolicy) -> None:
        self.domains = domains
        self.policy = policy
        self.slots = asyncio.Semaphore(MAX_CONNECTIONS)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async with self.slots:
            try:
                await self._one(reader, writer)
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
                pass
            finally:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), CONNECT_SECONDS)
        if len(head) > HEAD_BYTES:
            await _refuse(writer, 431, "request head too large")
            return
        request_line, _, rest = head.partition(b"\r\n")
        method, target, version = request_line.decode("latin-1").split(" ", 2)
        if method == "CONNECT":
            host, _, port = target.rpartition(":")
            upstream = await self._open(writer, host.strip("[]"), int(port or 443))
            if upstream is None:
                return
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            await _pipe(reader, writer, *upstream)
            return
        parts = urlsplit(target)
        if parts.scheme != "http" or not parts.hostname:
            await _refuse(writer, 400, "only CONNECT, or an absolute http:// URL")
            return
        upstream = await self._open(writer, parts.hostname, parts.port or 80)
        if upstream is None:
            return
        path = parts.path or "/"
        if parts.query:
            path += f"?{parts.query}"
        upstream[1].write(f"{method} {path} {version}\r\n".encode("latin-1") + rest)
        await _pipe(reader, writer, *upstream)

    async def _open(
        self, writer: asyncio.StreamWriter, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        if not allowed(host, self.domains):
            await _refuse(writer, 403, f"{host} is not in this container's network_policy")
            return None
        try:
            addresses = await self.policy.addresses(host, port)
        except EgressRefusedError:
            await _refuse(writer, 403, f"{host} does not resolve to an address this server may reach")
            return None
        try:
            return await asyncio.wait_for(asyncio.open_connection(addresses[0], port), CONNECT_SECONDS)
        except (OSError, TimeoutError):
            await _refuse(writer, 502, f"{host}:{port} did not answer")
            return None


async def _refuse(writer: asyncio.StreamWriter, status: int, why: str) -> None:
    body = why.encode()
    writer.write(
        f"HTTP/1.1 {status} Refused\r\ncontent-type: text/plain\r\ncontent-length: {len(body)}\r\n"
        "connection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(OSError):
        await writer.drain()


async def _pipe(
    client_reader: asyncio.StreamReader,
    client_writer: asyncio.StreamWriter,
    upstream_reader: asyncio.StreamReader,
    upstream_writer: asyncio.StreamWriter,
) -> None:
    async def copy(source: asyncio.StreamReader, target: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, TimeoutError):
            while data := await asyncio.wait_for(source.read(CHUNK), IDLE_SECONDS):
                target.write(data)
                await target.drain()
        with contextlib.suppress(OSError):
            target.close()

    try:
        await asyncio.gather(copy(client_reader, upstream_writer), copy(upstream_reader, client_writer))
    finally:
        upstream_writer.close()


async def main(socket_path: str, domains: list[str], policy: EgressPolicy) -> None:
    path = Path(socket_path)
    # Bound by its name in its directory: a socket's path may be no longer than 107 bytes,
    # and a container's directory alone may be longer.
    os.chdir(path.parent)
    Path(path.name).unlink(missing_ok=True)
    proxy = EgressProxy(domains, policy)
    server = await asyncio.start_unix_server(proxy.serve, path=path.name, limit=HEAD_BYTES)
    os.chmod(path.name, 0o666)  # the sandbox's user is not this one
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    socket_path, listed = sys.argv[1], sys.argv[2]
    egress = EgressPolicy.parse(sys.argv[3] if len(sys.argv) > 3 else "")
    asyncio.run(main(socket_path, [domain for domain in listed.split(",") if domain], egress))
