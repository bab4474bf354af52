"""Temporal beyond the dev server: the connection comes from the Temporal client
configuration operators already keep (`TEMPORAL_*` variables, TOML profiles), with TLS and
API keys, tested for real through a TLS front on the tests' Temporal server; flags win."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from models.errors import StartupError
from tests.support.processes import CLI
from tests.support.tls_proxy import Credentials, TlsProxy, make_credentials
from worker.settings import Settings
from worker.temporal import connect, temporal_connection

TEMPORAL_VARIABLES = [name for name in os.environ if name.startswith("TEMPORAL_")]


@pytest.fixture
def credentials(tmp_path: Path) -> Credentials:
    return make_credentials(tmp_path)


@pytest.fixture
def mutual_tls(temporal_address: str, credentials: Credentials) -> Iterator[TlsProxy]:
    proxy = TlsProxy(int(temporal_address.rsplit(":", 1)[1]), credentials, require_client_cert=True).start()
    yield proxy
    proxy.stop()


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in TEMPORAL_VARIABLES:
        monkeypatch.delenv(name)


def _tls_variables(proxy: TlsProxy, credentials: Credentials) -> dict[str, str]:
    return {
        "TEMPORAL_ADDRESS": f"127.0.0.1:{proxy.port}",
        "TEMPORAL_NAMESPACE": "default",
        "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(credentials.ca_cert),
        "TEMPORAL_TLS_SERVER_NAME": "temporal.test",
        "TEMPORAL_TLS_CLIENT_CERT_PATH": str(credentials.client_cert),
        "TEMPORAL_TLS_CLIENT_KEY_PATH": str(credentials.client_key),
    }


async def test_mutual_tls_from_temporal_variables(
    mutual_tls: TlsProxy, credentials: Credentials, monkeypatch: pytest.MonkeyPatch
):
    for name, value in _tls_variables(mutual_tls, credentials).items():
        monkeypatch.setenv(name, value)
    client = await connect(Settings())
    info = await client.workflow_service.get_system_info(
        __import__("temporalio.api.workflowservice.v1", fromlist=["GetSystemInfoRequest"]).GetSystemInfoRequest()
    )
    assert info.server_version and mutual_tls.handshakes >= 1
    assert temporal_connection(Settings()).describe() == f"127.0.0.1:{mutual_tls.port} (namespace default, TLS)"


async def test_a_profile_in_a_config_file(
    mutual_tls: TlsProxy, credentials: Credentials, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    config = tmp_path / "temporal.toml"
    config.write_text(f"""
[profile.prod]
address = "127.0.0.1:{mutual_tls.port}"
namespace = "default"
[profile.prod.tls]
server_name = "temporal.test"
server_ca_cert_path = "{credentials.ca_cert}"
client_cert_path = "{credentials.client_cert}"
client_key_path = "{credentials.client_key}"
""")
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(config))
    monkeypatch.setenv("TEMPORAL_PROFILE", "prod")
    client = await connect(Settings())
    assert (await client.count_workflows("WorkflowType = 'nothing'")).count == 0


async def test_without_the_client_certificate_the_server_refuses(
    mutual_tls: TlsProxy, credentials: Credentials, monkeypatch: pytest.MonkeyPatch
):
    for name, value in _tls_variables(mutual_tls, credentials).items():
        if "CLIENT" not in name:
            monkeypatch.setenv(name, value)
    with pytest.raises(RuntimeError):
        client = await connect(Settings())
        await client.count_workflows()


async def test_an_api_key_turns_tls_on_and_reaches_the_client(
    temporal_address: str, credentials: Credentials, monkeypatch: pytest.MonkeyPatch
):
    proxy = TlsProxy(int(temporal_address.rsplit(":", 1)[1]), credentials, require_client_cert=False).start()
    try:
        monkeypatch.setenv("TEMPORAL_ADDRESS", f"127.0.0.1:{proxy.port}")
        monkeypatch.setenv("TEMPORAL_API_KEY", "temporal-cloud-key")
        monkeypatch.setenv("TEMPORAL_TLS_SERVER_CA_CERT_PATH", str(credentials.ca_cert))
        monkeypatch.setenv("TEMPORAL_TLS_SERVER_NAME", "temporal.test")
        connection = temporal_connection(Settings())
        assert connection.tls and connection.api_key == "temporal-cloud-key"
        assert "temporal-cloud-key" not in repr(connection) and "API key" in connection.describe()
        client = await connect(Settings())
        assert client.service_client.config.api_key == "temporal-cloud-key"
        assert (await client.count_workflows("WorkflowType = 'nothing'")).count == 0 and proxy.handshakes >= 1
    finally:
        proxy.stop()


def test_flags_win_over_the_configuration(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TEMPORAL_ADDRESS", "from-variables:7233")
    monkeypatch.setenv("TEMPORAL_NAMESPACE", "from-variables")
    assert temporal_connection(Settings()).target_host == "from-variables:7233"
    flagged = temporal_connection(Settings.from_env(temporal_address="from-flag:7233", namespace="flagged"))
    assert (flagged.target_host, flagged.namespace) == ("from-flag:7233", "flagged")
    assert temporal_connection(Settings(temporal_environment=False)).target_host == "localhost:7233"


def test_a_configuration_that_cannot_be_read_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    broken = tmp_path / "temporal.toml"
    broken.write_text("[profile.default\naddress = ")
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(broken))
    with pytest.raises(StartupError, match="cannot read the Temporal client configuration"):
        temporal_connection(Settings())
    done = subprocess.run(
        [CLI, "worker", "--database-url", f"sqlite:///{tmp_path / 'store.db'}"],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ | {"TEMPORAL_CONFIG_FILE": str(broken)},
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith("durable-responses worker: cannot read the Temporal client configuration")
    )
