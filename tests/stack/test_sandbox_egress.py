"""A container whose `network_policy` allows a list of domains reaches those, through its
egress proxy (`sandbox/egress_proxy.py`), and nothing else: not another name for the same
address, not an address or a port the container egress rules refuse (`SANDBOX_EGRESS_ALLOWLIST`,
`sandbox/egress_rules.py`), never this deployment's own API or Temporal, not a request pipelined
behind an allowed one, not anything without the proxy. A malformed request is one line of a
bounded log. Real bubblewrap, real HTTP servers on the loopback (named `localhost`, which the
allowlist opens as an operator would), the session's real Temporal server and API."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from access.egress import EgressPolicy
from response_service.containers import _refused
from sandbox import bubblewrap
from sandbox.containers import ContainerHost, ContainerLimits
from sandbox.egress_proxy import LOG_BYTES
from sandbox.egress_rules import SandboxEgress
from tests.support.sandboxes import remove_everything
from tests.support.stack import Stack

pytestmark = pytest.mark.skipif(
    bubblewrap.bwrap_path() is None or os.geteuid() != 0, reason="needs bubblewrap, run as root (as CI runs)"
)
MiB = 1024 * 1024
OPEN = replace(ContainerLimits(memory_bytes=256 * MiB, disk_bytes=32 * MiB), allowed_domains=("localhost",))

FETCH = """
import http.client, socket, sys, urllib.request
port = {port}
def fetch(url):
    try:
        return urllib.request.urlopen(url, timeout=5).read().decode()
    except Exception as error:
        return f"refused: {{error}}"
print("plain:", fetch(f"http://localhost:{{port}}/hello"))
print("other name:", fetch(f"http://localhost.localdomain:{{port}}/hello"))
tunnel = http.client.HTTPConnection("127.0.0.1", 3128, timeout=5)
tunnel.set_tunnel("localhost", port)
try:
    tunnel.request("GET", "/tunnelled")
    print("tunnel:", tunnel.getresponse().read().decode())
except OSError as error:
    print("tunnel: refused", error)
try:
    socket.create_connection(("127.0.0.1", port), timeout=2)
    print("direct: reached")
except OSError as error:
    print("direct: refused", type(error).__name__)
"""


class Recording(BaseHTTPRequestHandler):
    """Answers every GET, and remembers each path it was asked for."""

    protocol_version = "HTTP/1.1"
    seen: list[str]

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.seen.append(self.path)
        body = f"hello from {self.path}".encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


def serving() -> tuple[ThreadingHTTPServer, list[str]]:
    seen: list[str] = []
    handler = type("Handler", (Recording,), {"seen": seen})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, seen


@pytest.fixture
def server() -> Iterator[int]:
    httpd, _ = serving()
    yield httpd.server_address[1]
    httpd.shutdown()


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[ContainerHost]:
    opened = ContainerHost.open(tmp_path / "containers", SandboxEgress.parse("localhost:*"))
    yield opened
    await remove_everything(opened)


async def run(host: ContainerHost, limits: ContainerLimits, command: str) -> str:
    container = f"cntr_{uuid.uuid4().hex}"
    await host.prepare(container, limits)
    run = await host.start_shell(container, uuid.uuid4().hex, 0, command, 60, limits)
    out = {"stdout": b"", "stderr": b""}
    async for stream, data in run.follow({}):
        out[stream] += data
    return out["stdout"].decode() + (f"\n[stderr] {out['stderr'].decode()}" if out["stderr"] else "")


def python(code: str) -> str:
    return f"python3 - <<'EOF'\n{code}\nEOF"


async def test_only_the_allowed_domains_through_the_proxy(host: ContainerHost, server: int):
    said = await run(host, OPEN, python(FETCH.format(port=server)))
    assert "plain: hello from /hello" in said, said
    assert "tunnel: hello from /tunnelled" in said, said
    assert "other name: refused" in said and "403" in said  # the same address, a name not allowed
    assert "direct: refused" in said  # no way out but the proxy


async def test_an_address_the_rules_refuse_is_refused(tmp_path: Path, server: int):
    guarded = ContainerHost.open(tmp_path / "guarded")  # no SANDBOX_EGRESS_ALLOWLIST: the loopback is private
    try:
        said = await run(guarded, OPEN, python(FETCH.format(port=server)))
    finally:
        await remove_everything(guarded)
    assert "plain: refused" in said and "hello" not in said, said


async def test_a_listed_host_is_reached_on_80_and_443_only_unless_a_port_is_named(tmp_path: Path, server: int):
    portless = ContainerHost.open(tmp_path / "portless", SandboxEgress.parse("localhost"))
    try:
        said = await run(portless, OPEN, python(FETCH.format(port=server)))
    finally:
        await remove_everything(portless)
    assert "plain: refused" in said and "403" in said and "hello" not in said, said


async def test_this_deployments_own_api_and_temporal_are_never_reached(
    tmp_path: Path, stack: Stack, temporal_address: str
):
    """The operator opened every port of the loopback: the API and Temporal's frontend stay shut
    (and a third server on the same loopback is reached, so it is not the opening that failed)."""
    api = urlsplit(stack.base_url)
    own = [temporal_address, f"{api.hostname}:{api.port}"]
    wide = ContainerHost.open(tmp_path / "wide", SandboxEgress.parse("localhost:*").closing(own))
    other, _ = serving()
    temporal_port = int(temporal_address.rpartition(":")[2])
    probe = f"""
import http.client, urllib.request
def fetch(url):
    try:
        return urllib.request.urlopen(url, timeout=5).read().decode()
    except Exception as error:
        return f"refused: {{error}}"
print("api:", fetch("http://localhost:{api.port}/health"))
print("other:", fetch("http://localhost:{other.server_address[1]}/x"))
tunnel = http.client.HTTPConnection("127.0.0.1", 3128, timeout=5)
tunnel.set_tunnel("localhost", {temporal_port})
try:
    tunnel.connect()
    print("temporal: reached")
except OSError as error:
    print("temporal: refused", error)
"""
    try:
        said = await run(wide, OPEN, python(probe))
    finally:
        other.shutdown()
        await remove_everything(wide)
    assert "api: refused" in said and "403" in said, said
    assert "temporal: refused" in said and "403" in said, said
    assert "other: hello from /x" in said, said


async def test_a_request_pipelined_behind_an_allowed_one_is_never_sent(host: ContainerHost):
    """The second request of one connection names a host off the list: it reaches nothing, not
    even the allowed host's server (which may serve other names at the same address)."""
    httpd, seen = serving()
    port = httpd.server_address[1]
    pipelined = f"""
import socket
client = socket.create_connection(("127.0.0.1", 3128), timeout=5)
client.sendall(
    b"GET http://localhost:{port}/first HTTP/1.1\\r\\nhost: localhost\\r\\n\\r\\n"
    b"GET http://localhost.localdomain:{port}/second HTTP/1.1\\r\\nhost: localhost.localdomain\\r\\n\\r\\n"
)
got = b""
while data := client.recv(65536):
    got += data
print(got.decode(errors="replace"))
"""
    try:
        said = await run(host, OPEN, python(pipelined))
    finally:
        httpd.shutdown()
    assert "hello from /first" in said and said.count("HTTP/1.") == 1, said
    assert seen == ["/first"], seen


async def test_malformed_requests_are_one_line_each_in_a_bounded_log(host: ContainerHost, server: int):
    container = f"cntr_{uuid.uuid4().hex}"
    await host.prepare(container, OPEN)
    # A socket's path may be no longer than 107 bytes: reached through a descriptor of its directory.
    directory = os.open(host.directory(container) / "egress", os.O_PATH)
    socket_path = f"/proc/self/fd/{directory}/proxy.sock"
    bad = [
        b"CONNECT localhost:70000 HTTP/1.1\r\n\r\n",
        b"GET http://localhost:99999999/ HTTP/1.1\r\n\r\n",
        b"NONSENSE\r\n\r\n",
        b"GET http://localhost:%d/ HTTP/1.1\r\ncontent-length: x\r\n\r\n" % server,
        b"CONNECT com.au:443 HTTP/1.1\r\n\r\n",
    ]

    async def send(request: bytes) -> bytes:
        reader, writer = await asyncio.open_unix_connection(socket_path)
        try:
            writer.write(request)
            await writer.drain()
            return await reader.read()
        except ConnectionResetError:  # past its connections at once, the proxy answers 503 and closes
            return b""
        finally:
            writer.close()

    answers = [await send(request) for request in bad]
    assert all(answer.startswith((b"HTTP/1.1 400", b"HTTP/1.1 403")) for answer in answers), answers
    log = (host.directory(container) / "egress-proxy.log").read_text()
    assert "Traceback" not in log and len(log.splitlines()) == len(bad), log
    for _ in range(20):
        await asyncio.gather(*(send(bad[0]) for _ in range(100)))
    os.close(directory)
    kept = sum(path.stat().st_size for path in host.directory(container).glob("egress-proxy.log*"))
    assert kept <= 2 * LOG_BYTES + 4096, kept


async def test_the_proxy_outlives_nothing_of_its_container(host: ContainerHost, server: int):
    container = f"cntr_{uuid.uuid4().hex}"
    await host.prepare(container, OPEN)
    pid = int((host.directory(container) / "egress-proxy.pid").read_text().split()[0])
    await host.prepare(container, OPEN)  # again: the one running is kept
    assert int((host.directory(container) / "egress-proxy.pid").read_text().split()[0]) == pid
    cgroup = host.cgroup(container)
    if cgroup is not None:
        assert pid in cgroup.service.pids(), "the proxy runs in its container's service cgroup"
    await host.remove(container)
    await asyncio.sleep(0.2)
    assert not Path(f"/proc/{pid}").exists() or b"zombie" in Path(f"/proc/{pid}/status").read_bytes().lower()


async def test_a_domain_that_resolves_to_a_refused_address_is_refused_at_the_door():
    assert await _refused("localhost", SandboxEgress())
    assert not await _refused("localhost", SandboxEgress.parse("127.0.0.1"))
    assert await _refused("localhost", SandboxEgress.parse("127.0.0.1").closing(["127.0.0.1:443"]))
    assert not await _refused("does-not-resolve.invalid", SandboxEgress())  # checked again at each connection


def test_the_mcp_allowlist_opens_nothing_to_containers(monkeypatch: pytest.MonkeyPatch):
    """`dev` opens the loopback to MCP servers (`EGRESS_ALLOWLIST`); code in containers gets none of it."""
    from worker.settings import Settings

    monkeypatch.setenv("EGRESS_ALLOWLIST", "localhost,127.0.0.0/8")
    monkeypatch.delenv("SANDBOX_EGRESS_ALLOWLIST", raising=False)
    settings = Settings.from_env()
    assert EgressPolicy.parse(settings.egress_allowlist).allows("localhost", ipaddress.ip_address("127.0.0.1"))
    refusal = settings.sandbox.egress().refusal("localhost", ipaddress.ip_address("127.0.0.1"), 80)
    assert refusal is not None and "not a public address" in refusal


async def test_a_request_framed_to_smuggle_another_is_refused(host: ContainerHost):
    """The review of this change (F3): a request with both a length and chunks, or a chunk of a
    negative size, carried a second request to the server unchecked."""
    httpd, seen = serving()
    port = httpd.server_address[1]
    container = f"cntr_{uuid.uuid4().hex}"
    await host.prepare(container, OPEN)
    directory = os.open(host.directory(container) / "egress", os.O_PATH)
    smuggled = b"GET /smuggled HTTP/1.1\r\nhost: localhost\r\n\r\n"
    framings = [
        b"POST http://localhost:%d/both HTTP/1.1\r\ncontent-length: 4\r\ntransfer-encoding: chunked\r\n\r\n" % port
        + b"%x\r\n" % len(smuggled)
        + smuggled
        + b"\r\n0\r\n\r\n",
        b"POST http://localhost:%d/negative HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n-3\r\n" % port + smuggled,
        b"POST http://localhost:%d/twice HTTP/1.1\r\ncontent-length: 0\r\ncontent-length: 44\r\n\r\n" % port + smuggled,
    ]
    try:
        for request in framings:
            reader, writer = await asyncio.open_unix_connection(f"/proc/self/fd/{directory}/proxy.sock")
            writer.write(request)
            await writer.drain()
            answer = await asyncio.wait_for(reader.read(), 10)
            writer.close()
            assert not answer.startswith(b"HTTP/1.1 2"), answer
        await asyncio.sleep(0.3)
    finally:
        os.close(directory)
        httpd.shutdown()
    assert "/smuggled" not in seen, seen
