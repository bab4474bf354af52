"""A container's way out, when its `network_policy` allows a list of domains: an HTTP proxy on
a Unix socket in the container's directory, its own process (started like a command's
launcher, so it outlives the worker that started it, and in the container's `service` cgroup),
which the sandbox reaches through the socket alone (its network namespace has no other way
out; `sandbox/egress_forwarder.py` listens on its loopback for the programs inside).

    python -m sandbox.egress_proxy SOCKET DOMAIN[,DOMAIN...] RULES LOG

It takes one request a connection, and checks it before anything reaches the network:

- `CONNECT host:port` is tunnelled, and a plain `http://` request forwarded (its body framed
  by its `content-length` or its chunks, nothing after it), only to the listed domains and
  their subdomains (a domain that is a public suffix, `com.au`, lists nothing: the list of
  them ships in `publicsuffixlist`), and only to addresses and ports the container egress
  rules allow (`sandbox/egress_rules.py`, RULES as their JSON): public addresses on 80 and
  443, what `SANDBOX_EGRESS_ALLOWLIST` opens, never this deployment's own services or a
  cloud metadata address;
- the connection is closed after the reply (`connection: close` both ways), so a second
  request pipelined behind the first is never sent anywhere unchecked;
- anything else, malformed requests too, is answered 4xx and logged in one line, in a log
  of bounded size (LOG). Connections at once and the bytes of a request's head are bounded;
  an idle tunnel is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import logging.handlers
import os
import re
import sys
from pathlib import Path
from urllib.parse import urlsplit

from access.egress import EgressRefusedError
from models.public_suffixes import is_public_suffix
from sandbox.egress_rules import SandboxEgress

HEAD_BYTES = 16 * 1024
MAX_CONNECTIONS = 64
IDLE_SECONDS = 300.0
CONNECT_SECONDS = 15.0
CHUNK = 64 * 1024
LOG_BYTES = 64 * 1024
"""The log is kept to two files of this size at most (the older one dropped as it fills)."""
CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}")
HOP_BY_HOP = {b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization", b"proxy-authenticate", b"te"}
HOP_BY_HOP |= {b"upgrade", b"trailer"}

log = logging.getLogger("sandbox.egress_proxy")


class Refused(Exception):
    """A request this proxy does not carry: its status and why."""

    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status
        self.why = why


def allowed(host: str, domains: list[str]) -> bool:
    host = host.lower().rstrip(".")
    return any((host == domain or host.endswith(f".{domain}")) and not is_public_suffix(domain) for domain in domains)


def _port(text: str, default: int) -> int:
    if not text:
        return default
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise Refused(400, f"{text[:20]!r} is not a port")
    return int(text)


class EgressProxy:
    def __init__(self, domains: list[str], rules: SandboxEgress) -> None:
        self.domains = domains
        self.rules = rules
        self.slots = asyncio.Semaphore(MAX_CONNECTIONS)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.slots.locked():  # as many connections as it serves: the next is refused, not queued
            await _refuse(writer, 503, f"{MAX_CONNECTIONS} connections at once already")
            writer.close()
            return
        async with self.slots:
            try:
                await self._one(reader, writer)
            except Refused as refused:
                log.info("refused (%d): %s", refused.status, refused.why)
                await _refuse(writer, refused.status, refused.why)
            except asyncio.LimitOverrunError:
                log.info("refused (431): a request head over %d bytes", HEAD_BYTES)
                await _refuse(writer, 431, "request head too large")
            except (asyncio.IncompleteReadError, TimeoutError, ConnectionError):
                pass  # the client (or the upstream) went, or said nothing in time: nothing to answer
            except Exception as error:  # noqa: BLE001 - whatever a request does, one line and on
                log.warning("a malformed request: %s: %s", type(error).__name__, str(error)[:200])
                await _refuse(writer, 400, "malformed request")
            finally:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), CONNECT_SECONDS)
        request_line, _, rest = head.partition(b"\r\n")
        parts = request_line.decode("latin-1").split(" ")
        if len(parts) != 3:
            raise Refused(400, "malformed request line")
        method, target, version = parts
        if method == "CONNECT":
            host, _, port = target.rpartition(":")
            upstream = await self._open(host.strip("[]"), _port(port, 443))
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            await _pipe(reader, writer, *upstream)
            return
        address = urlsplit(target)
        if address.scheme != "http" or not address.hostname:
            raise Refused(400, "only CONNECT, or an absolute http:// URL")
        try:
            url_port = address.port
        except ValueError:
            raise Refused(400, "the URL's port is not a port") from None
        if url_port == 0:
            raise Refused(400, "the URL's port is not a port")
        headers, framing = _headers(rest)  # checked before anything is sent on
        upstream = await self._open(address.hostname, url_port or 80)
        path = address.path or "/"
        if address.query:
            path += f"?{address.query}"
        try:
            upstream[1].write(
                f"{method} {path} {version}\r\n".encode("latin-1") + headers + b"connection: close\r\n\r\n"
            )
            await _body(reader, upstream[1], framing)
            await _reply(upstream[0], writer)
        finally:
            upstream[1].close()

    async def _open(self, host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if not allowed(host, self.domains):
            raise Refused(403, f"{host} is not in this container's network_policy")
        try:
            addresses = await self.rules.addresses(host, port)
        except EgressRefusedError as refused:
            raise Refused(403, str(refused)) from None
        try:
            return await asyncio.wait_for(asyncio.open_connection(addresses[0], port), CONNECT_SECONDS)
        except (OSError, TimeoutError):
            raise Refused(502, f"{host}:{port} did not answer") from None


def _headers(block: bytes) -> tuple[bytes, int | str]:
    """The request's headers without the hop-by-hop ones, and how its body is framed: a length,
    or `chunked`. A request framed twice (both headers, or two lengths) is refused: the proxy
    and the server behind it must never read two different requests from the same bytes."""
    kept: list[bytes] = []
    framings: list[int | str] = []
    for line in block.split(b"\r\n"):
        if not line:
            continue
        name, colon, value = line.partition(b":")
        if not colon or name != name.strip() or not name:
            raise Refused(400, "malformed header")
        lowered, value = name.lower(), value.strip()
        if lowered in HOP_BY_HOP:
            continue
        if lowered == b"content-length":
            if not value.isdigit() or len(value) > 18:
                raise Refused(400, "malformed content-length")
            framings.append(int(value))
        elif lowered == b"transfer-encoding":
            if value.lower() != b"chunked":
                raise Refused(501, "only chunked transfer-encoding")
            framings.append("chunked")
        kept.append(line + b"\r\n")
    if len(framings) > 1:
        raise Refused(400, "a request framed twice (content-length and transfer-encoding, or two lengths)")
    return b"".join(kept), framings[0] if framings else 0


async def _body(reader: asyncio.StreamReader, upstream: asyncio.StreamWriter, framing: int | str) -> None:
    """The request's body, exactly as framed: what the client sends after it is never sent on."""
    if framing == "chunked":
        while True:
            size_line = await asyncio.wait_for(reader.readuntil(b"\r\n"), IDLE_SECONDS)
            digits = size_line.split(b";", 1)[0].strip()
            if not CHUNK_SIZE.fullmatch(digits):
                raise Refused(400, "malformed chunk size")
            upstream.write(size_line)
            size = int(digits, 16)
            if size == 0:
                while (trailer := await asyncio.wait_for(reader.readuntil(b"\r\n"), IDLE_SECONDS)) != b"\r\n":
                    upstream.write(trailer)
                upstream.write(b"\r\n")
                break
            await _copy_exactly(reader, upstream, size + 2)
    else:
        assert isinstance(framing, int)
        await _copy_exactly(reader, upstream, framing)
    await upstream.drain()


async def _copy_exactly(reader: asyncio.StreamReader, upstream: asyncio.StreamWriter, count: int) -> None:
    while count:
        data = await asyncio.wait_for(reader.read(min(CHUNK, count)), IDLE_SECONDS)
        if not data:
            raise asyncio.IncompleteReadError(b"", count)
        upstream.write(data)
        await upstream.drain()
        count -= len(data)


async def _reply(upstream: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """The reply, its head saying `connection: close` (the proxy takes no second request)."""
    head = await asyncio.wait_for(upstream.readuntil(b"\r\n\r\n"), IDLE_SECONDS)
    status, _, block = head.partition(b"\r\n")
    lines = [
        line for line in block.split(b"\r\n") if line and line.partition(b":")[0].strip().lower() not in HOP_BY_HOP
    ]
    writer.write(status + b"\r\n" + b"".join(line + b"\r\n" for line in lines) + b"connection: close\r\n\r\n")
    with contextlib.suppress(OSError, TimeoutError):
        while data := await asyncio.wait_for(upstream.read(CHUNK), IDLE_SECONDS):
            writer.write(data)
            await writer.drain()


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


def _logging_to(path: str) -> None:
    handler = logging.handlers.RotatingFileHandler(path, maxBytes=LOG_BYTES, backupCount=1)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


async def main(socket_path: str, domains: list[str], rules: SandboxEgress) -> None:
    path = Path(socket_path)
    # Bound by its name in its directory: a socket's path may be no longer than 107 bytes,
    # and a container's directory alone may be longer.
    os.chdir(path.parent)
    Path(path.name).unlink(missing_ok=True)
    proxy = EgressProxy(domains, rules)
    server = await asyncio.start_unix_server(proxy.serve, path=path.name, limit=HEAD_BYTES)
    os.chmod(path.name, 0o666)  # the sandbox's user is not this one
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    socket_path, listed, rules_json, log_path = sys.argv[1:5]
    _logging_to(log_path)
    try:
        asyncio.run(
            main(socket_path, [domain for domain in listed.split(",") if domain], SandboxEgress.from_json(rules_json))
        )
    except Exception:
        log.exception("the egress proxy stopped")
        raise
