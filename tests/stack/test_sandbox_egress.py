"""A container whose `network_policy` allows a list of domains reaches those, through its
egress proxy (`sandbox/egress_proxy.py`), and nothing else: not another name for the same
address, not an address the egress guard refuses, not anything without the proxy. Real
bubblewrap, a real HTTP server on the loopback (named `localhost`, which the egress
allowlist opens as `EGRESS_ALLOWLIST` would)."""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from access.egress import EgressPolicy
from response_service.containers import _refused
from sandbox import bubblewrap
from sandbox.containers import ContainerHost, ContainerLimits

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
tunnel.request("GET", "/tunnelled")
print("tunnel:", tunnel.getresponse().read().decode())
try:
    socket.create_connection(("127.0.0.1", port), timeout=2)
    print("direct: reached")
except OSError as error:
    print("direct: refused", type(error).__name__)
"""


class Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = f"hello from {self.path}".encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[int]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1]
    httpd.shutdown()


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[ContainerHost]:
    opened = ContainerHost.open(tmp_path / "containers", egress_allowlist="localhost")
    yield opened
    for each in opened.containers():
        await opened.remove(each)


async def run(host: ContainerHost, limits: ContainerLimits, command: str) -> str:
    container = f"cntr_{uuid.uuid4().hex}"
    await host.prepare(container, limits)
    run = await host.start_shell(container, uuid.uuid4().hex, 0, command, 60, limits)
    out = b""
    async for stream, data in run.follow({}):
        out += data if stream == "stdout" else b""
    return out.decode()


async def test_only_the_allowed_domains_through_the_proxy(host: ContainerHost, server: int):
    said = await run(host, OPEN, f"python3 - <<'EOF'\n{FETCH.format(port=server)}\nEOF")
    assert "plain: hello from /hello" in said, said
    assert "tunnel: hello from /tunnelled" in said, said
    assert "other name: refused" in said and "403" in said  # the same address, a name not allowed
    assert "direct: refused" in said  # no way out but the proxy


async def test_an_address_the_egress_guard_refuses_is_refused(tmp_path: Path, server: int):
    guarded = ContainerHost.open(tmp_path / "guarded")  # no EGRESS_ALLOWLIST: the loopback is private
    try:
        said = await run(guarded, OPEN, f"python3 - <<'EOF'\n{FETCH.format(port=server)}\nEOF")
    finally:
        for each in guarded.containers():
            await guarded.remove(each)
    assert "plain: refused" in said and "hello" not in said.split("tunnel:")[0], said


async def test_the_proxy_outlives_nothing_of_its_container(host: ContainerHost, server: int):
    container = f"cntr_{uuid.uuid4().hex}"
    await host.prepare(container, OPEN)
    pid = int((host.directory(container) / "egress-proxy.pid").read_text())
    await host.prepare(container, OPEN)  # again: the one running is kept
    assert int((host.directory(container) / "egress-proxy.pid").read_text()) == pid
    await host.remove(container)
    await asyncio.sleep(0.2)
    assert not Path(f"/proc/{pid}").exists() or b"zombie" in Path(f"/proc/{pid}/status").read_bytes().lower()


async def test_a_domain_that_resolves_to_a_refused_address_is_refused_at_the_door():
    assert await _refused("localhost", EgressPolicy())
    assert not await _refused("localhost", EgressPolicy.parse("127.0.0.1"))
    assert not await _refused("does-not-resolve.invalid", EgressPolicy())  # checked again at each connection
