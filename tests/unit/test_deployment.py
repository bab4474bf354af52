"""The deployment files match the project: the image installs every package and runs the
CLI; the compose file is valid YAML whose every command the CLI accepts, with Temporal,
PostgreSQL, two workers and two API servers. (Neither is built here: no registry access.)"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import yaml

from worker.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]


def test_the_image_installs_every_package_and_runs_the_cli():
    dockerfile = (ROOT / "Dockerfile").read_text()
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    copied = set(re.findall(r"^COPY (\w+) \./\1$", dockerfile, re.MULTILINE))
    assert copied == {package.split(".")[0] for package in packages}  # a directory brings its subpackages
    assert 'ENTRYPOINT ["durable-responses"]' in dockerfile
    default = re.search(r"^CMD (\[.*\])$", dockerfile, re.MULTILINE)
    build_parser().parse_args(yaml.safe_load(default.group(1)))


def test_the_compose_file_runs_the_whole_deployment_with_commands_the_cli_accepts():
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    services = compose["services"]
    ours = {
        name: service
        for name, service in services.items()
        if service.get("image") == "durable-responses:latest" and "entrypoint" not in service
    }
    roles = {name: service["command"][0] for name, service in ours.items()}
    assert sorted(roles.values()) == ["keys", "serve", "serve", "worker", "worker"]
    for name, service in ours.items():
        build_parser().parse_args(service["command"])  # exits on anything the CLI does not take
        environment = service["environment"]
        assert environment["DATABASE_URL"].startswith("postgresql://"), name
        assert environment["TEMPORAL_ADDRESS"] == "temporal:7233", name
    assert services["postgresql"]["image"].startswith("postgres:")
    assert services["temporal"]["entrypoint"] == ["temporal"]
    assert services["temporal"]["command"][:2] == ["server", "start-dev"]
    published = [port for service in services.values() for port in service.get("ports", [])]
    assert all(port.startswith("127.0.0.1:") for port in published), "nothing is published beyond this machine"


def test_the_dashboard_and_alerts_use_only_metrics_the_server_exports():
    from telemetry.metrics import REGISTRY

    exported = set()
    for family in REGISTRY.collect():
        for sample_suffix in ("", "_total", "_bucket", "_count", "_sum"):
            exported.add(family.name + sample_suffix)
    dashboard = json.loads((ROOT / "deploy" / "grafana-dashboard.json").read_text())
    expressions = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    rules = yaml.safe_load((ROOT / "deploy" / "alerts.yaml").read_text())["groups"][0]["rules"]
    expressions += [rule["expr"] for rule in rules]
    used = {name for expression in expressions for name in re.findall(r"durable_responses_\w+", expression)}
    assert used and used <= exported, used - exported
    assert {rule["alert"] for rule in rules} >= {
        "DurableResponsesApprovalsStuck",
        "DurableResponsesUpstreamErrors",
        "DurableResponsesSlowFirstDelta",
    }
