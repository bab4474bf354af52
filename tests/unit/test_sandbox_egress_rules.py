"""The container egress rules (`sandbox/egress_rules.py`), as properties: whatever an operator
opens, a cloud metadata address and this deployment's own services stay shut; without an
opening only public addresses on ports 80 and 443 are reached; an entry that cannot be read is
a start-up error naming it; the rules reach the proxy unchanged."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandbox.egress_proxy import allowed
from sandbox.egress_rules import METADATA, SandboxEgress, SandboxEgressError

ports = st.integers(min_value=1, max_value=65535)
ipv4 = st.ip_addresses(v=4)
openings = st.lists(
    st.sampled_from(
        [
            "0.0.0.0/0:*",
            "::/0",
            "[::/0]:*",
            "169.254.0.0/16:*",
            "10.0.0.0/8:*",
            "localhost:*",
            "127.0.0.1",
            "[fd00::/8]:80",
        ]
    ),
    max_size=5,
)


@given(openings, ports, st.sampled_from([str(network.network_address) for network in METADATA]))
def test_a_metadata_address_is_never_reached(opened: list[str], port: int, address: str):
    rules = SandboxEgress.parse(",".join(opened))
    assert rules.refusal("metadata.internal", ipaddress.ip_address(address), port) == "a cloud metadata address"


@given(openings, ports)
def test_this_deployments_services_are_never_reached(opened: list[str], port: int):
    rules = SandboxEgress.parse(",".join(opened)).closing([f"127.0.0.1:{port}", f"10.1.2.3:{port}"])
    for address in ("127.0.0.1", "127.0.0.2", "0.0.0.0", "10.1.2.3", "::1", "::ffff:127.0.0.1"):
        assert rules.refusal("localhost", ipaddress.ip_address(address), port) == "one of this server's own services"
    assert rules.refusal("x", ipaddress.ip_address("10.1.2.4"), port) != "one of this server's own services"


@given(ipv4, ports)
def test_without_an_opening_only_public_addresses_on_80_and_443(address: ipaddress.IPv4Address, port: int):
    refused = SandboxEgress().refusal("example.com", address, port)
    reachable = not (address.is_private or address.is_loopback or address.is_reserved or address.is_multicast)
    reachable = reachable and not address.is_unspecified and not address.is_link_local
    reachable = reachable and address not in ipaddress.ip_network("100.64.0.0/10")
    assert (refused is None) == (reachable and port in (80, 443)), (address, port, refused)


def test_an_opening_names_its_ports():
    rules = SandboxEgress.parse("pypi.internal:3141, 10.0.0.0/8, [fd00::/8]:8080, cache.internal:*")
    private, v6 = ipaddress.ip_address("10.1.1.1"), ipaddress.ip_address("fd00::1")
    assert rules.refusal("pypi.internal", private, 3141) is None
    assert rules.refusal("pypi.internal", private, 443) is None  # 10/8 on 443
    assert rules.refusal("other.internal", private, 3141) is not None
    assert rules.refusal("x", v6, 8080) is None and rules.refusal("x", v6, 443) is not None
    assert rules.refusal("cache.internal", ipaddress.ip_address("192.168.1.1"), 11211) is None


@pytest.mark.parametrize("entry", ["10.0.0.0/8:99999", "host:port", "[fd00::/8", "a b", "host:0", "[::1]x"])
def test_an_entry_that_cannot_be_read_is_named(entry: str):
    with pytest.raises(SandboxEgressError, match="SANDBOX_EGRESS_ALLOWLIST"):
        SandboxEgress.parse(f"ok.example, {entry}")


@given(openings, st.lists(st.sampled_from(["127.0.0.1:7233", "0.0.0.0:8000", "[::1]:9000"]), max_size=3))
def test_the_rules_reach_the_proxy_unchanged(opened: list[str], own: list[str]):
    rules = SandboxEgress.parse(",".join(opened)).closing(own)
    assert SandboxEgress.from_json(rules.to_json()) == rules


def test_a_public_suffix_allows_nothing():
    assert not allowed("shop.example.com.au", ["com.au"])
    assert not allowed("someone.github.io", ["github.io"])
    assert allowed("api.example.com.au", ["example.com.au"]) and allowed("localhost", ["localhost"])
