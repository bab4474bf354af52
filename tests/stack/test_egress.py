"""The egress guard: an MCP server (or, later, a webhook) at a loopback, private, link-local,
multicast, unspecified or reserved address is refused however the address is spelled,
with one message that says nothing about the network, at the request and again at connect
time; EGRESS_ALLOWLIST opens exactly what it names."""

from __future__ import annotations

import ipaddress
import socket

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from access.egress import EgressPolicy, EgressRefusedError, guarded_http_client, is_public
from tests.support.mcp_servers import McpTestServer
from tests.support.stack import EmptyStore, Stack

REFUSED_URLS = [
    "http://127.0.0.1:{port}/mcp",
    "http://127.1:{port}/mcp",
    "http://2130706433:{port}/mcp",
    "http://0x7f.1:{port}/mcp",
    "http://0177.0.0.1:{port}/mcp",
    "http://localhost:{port}/mcp",
    "http://[::1]:{port}/mcp",
    "http://[::ffff:127.0.0.1]:{port}/mcp",
    "http://[::ffff:7f00:1]:{port}/mcp",
    "http://0.0.0.0:{port}/mcp",
    "http://10.1.2.3/mcp",
    "http://172.16.0.1/mcp",
    "http://192.168.1.1/mcp",
    "http://169.254.169.254/latest/meta-data",
    "http://100.64.0.1/mcp",
    "http://[fe80::1]/mcp",
    "http://[fc00::1]/mcp",
    "http://224.0.0.1/mcp",
    "http://255.255.255.255/mcp",
    "http://[2002:7f00:1::1]/mcp",
    "http://no-such-host.invalid/mcp",
]


@pytest.mark.parametrize("url", REFUSED_URLS)
async def test_a_private_address_in_any_spelling_is_refused_alike(url: str, mcp_server: McpTestServer):
    policy = EgressPolicy.parse("")
    with pytest.raises(EgressRefusedError):
        await policy.check_url(url.format(port=mcp_server.port))


async def test_the_request_is_refused_with_one_message(temporal_address, backend, store: EmptyStore):
    """Through the API: every refused URL gets the same 400, naming the parameter only."""
    from tests.support.stack import running_stack

    loopback = ("127.", "2130706433", "0x7f", "0177", "localhost", "ffff:7f00", "ffff:127")
    async with running_stack(temporal_address, backend, store) as stack:
        answers = set()
        async with stack.http() as http:
            # The test stack allows 127.0.0.1 (its MCP servers are there); everything else is refused.
            for url in [url for url in REFUSED_URLS if not any(part in url for part in loopback)]:
                answer = await http.post(
                    "/v1/responses",
                    json={
                        "model": "m",
                        "input": "hi",
                        "tools": [
                            {"type": "function", "name": "f"},
                            {"type": "mcp", "server_label": "x", "server_url": url.format(port=80)},
                        ],
                    },
                )
                assert answer.status_code == 400, (url, answer.text)
                answers.add(answer.text)
    assert answers == {
        '{"error":{"message":"Invalid \'tools[1].server_url\': this server may not connect to that '
        'URL.","type":"invalid_request_error","param":"tools[1].server_url","code":"invalid_value"}}'
    }


async def test_the_allowlist_opens_exactly_what_it_names(mcp_server: McpTestServer):
    policy = EgressPolicy.parse("127.0.0.1, db.internal, 10.20.0.0/16")
    await policy.check_url(mcp_server.url)
    assert policy.allows("db.internal", ipaddress.ip_address("192.168.7.7"))
    assert policy.allows("x", ipaddress.ip_address("10.20.3.4"))
    assert not policy.allows("x", ipaddress.ip_address("10.21.3.4"))
    with pytest.raises(EgressRefusedError):
        await policy.check_url(f"http://[::1]:{mcp_server.port}/mcp")
    assert EgressPolicy.parse("none") == EgressPolicy.parse("")


async def test_connections_are_checked_again_when_they_are_made(mcp_server: McpTestServer):
    """What passed the request's check but resolves to a refused address when the connection
    is made (DNS that changed; a redirect) is never connected to."""
    policy = EgressPolicy.parse("")
    async with guarded_http_client(policy) as client:
        for url in (mcp_server.url, f"http://localhost:{mcp_server.port}/mcp", f"http://2130706433:{mcp_server.port}/"):
            with pytest.raises(EgressRefusedError):
                await client.get(url)
    seen = len(mcp_server.headers_seen)
    async with guarded_http_client(EgressPolicy.parse("127.0.0.1")) as allowed:
        answer = await allowed.get(mcp_server.url)
    assert answer.status_code in (400, 405, 406) and len(mcp_server.headers_seen) == seen + 1


async def test_a_call_to_a_refused_server_fails_without_saying_why_on_the_network(
    stack: Stack, mcp_server: McpTestServer
):
    """A listing refused at connect time (here: the worker's policy is stricter than the
    API's) fails the response with a message that names the server and the policy only."""
    from activities.mcp_client import connected

    with pytest.raises(Exception) as raised:
        async with connected("tools", mcp_server.url, {}, egress=EgressPolicy.parse("")):
            pass
    assert str(raised.value) == "MCP server 'tools' may not be reached from this server (egress policy)"


_private_v4 = st.sampled_from(
    [
        "127.0.0.0/8",
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "169.254.0.0/16",
        "100.64.0.0/10",
        "0.0.0.0/8",
        "224.0.0.0/4",
        "240.0.0.0/4",
    ]
).flatmap(lambda network: st.integers(int(ipaddress.ip_network(network)[0]), int(ipaddress.ip_network(network)[-1])))


def _spellings(number: int) -> list[str]:
    """One IPv4 address as people and parsers write it: dotted, decimal, hex, octal, short,
    and inside IPv6 (mapped, 6to4)."""
    a, b, c, d = ipaddress.IPv4Address(number).packed
    return [
        f"{a}.{b}.{c}.{d}",
        str(number),
        hex(number),
        f"0{a:o}.{b}.{c}.{d}",
        f"{a}.{(b << 16) | (c << 8) | d}",
        f"[::ffff:{a}.{b}.{c}.{d}]",
        f"[2002:{a:02x}{b:02x}:{c:02x}{d:02x}::1]",
    ]


@settings(max_examples=200, deadline=None)
@given(number=_private_v4)
async def test_no_spelling_of_a_private_ipv4_address_gets_through(number: int):
    policy = EgressPolicy.parse("")
    for spelling in _spellings(number):
        try:
            found = socket.getaddrinfo(spelling.strip("[]"), 80, type=socket.SOCK_STREAM)
        except OSError:
            continue  # a spelling this resolver does not take cannot be connected to either
        assert not any(is_public(ipaddress.ip_address(entry[4][0])) for entry in found), spelling
        with pytest.raises(EgressRefusedError):
            await policy.check_url(f"http://{spelling}/mcp")


@settings(max_examples=100, deadline=None)
@given(number=st.integers(0, 2**32 - 1))
async def test_public_addresses_pass_and_only_they(number: int):
    address = ipaddress.IPv4Address(number)
    policy = EgressPolicy.parse("")
    if is_public(address):
        await policy.check_url(f"http://{address}/mcp")
        assert not (address.is_private or address.is_loopback or address in ipaddress.ip_network("100.64.0.0/10"))
    else:
        with pytest.raises(EgressRefusedError):
            await policy.check_url(f"http://{address}/mcp")


def test_httpx_is_not_used_unguarded_for_mcp():
    """Every MCP connection goes through the guarded client (no module builds its own)."""
    import inspect

    import activities.mcp_client as module

    source = inspect.getsource(module)
    assert "guarded_http_client" in source and "create_mcp_http_client" not in source
    assert httpx  # the tests' own client is plain httpx; the server's MCP client is httpx2, guarded
