"""Worker Deployment Versioning: a rollout decides, on purpose, what running responses do.

Off unless `WORKER_DEPLOYMENT_NAME` is set (`dev` and a single worker need none of it). Set,
every worker of the process polls as one version of that deployment, its build id
`WORKER_BUILD_ID` or, by default, the package's version and a digest of the workflow code
(`workflows/`, `models/`): two builds whose workflows could replay differently are two
versions, and the same code is the same version wherever it is built.

What a running workflow does when a new version becomes current is its versioning behavior,
`WORKER_VERSIONING_BEHAVIOR`:

- `auto_upgrade` (the default): running responses move to the new version at their next
  workflow task. A response can wait days for an approval, longer than old workers should be
  kept; every change of workflow code is guarded by `workflow.patched` and the replay tests
  (`workflows/patches.py`), which is what makes the move safe.
- `pinned`: a response ends on the version it started on. The old version's workers must run
  until it has drained (`temporal worker deployment describe-version` shows it), and a change
  needs no patch; for rollouts that change workflow code in a way no patch can cover.

A deployment with no current version (its first rollout) gets this version as current from
its first worker, so responses are served from the start; after that, an operator promotes
each new version (`temporal worker deployment set-current-version`, or ramps it), as
`docs/operating.md` says.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import importlib.metadata
import logging
from pathlib import Path
from typing import Literal, TypedDict

from temporalio.api.workflowservice.v1 import (
    DescribeWorkerDeploymentRequest,
    SetWorkerDeploymentCurrentVersionRequest,
)
from temporalio.client import Client
from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.service import RPCError
from temporalio.worker import WorkerDeploymentConfig

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW_CODE = ("workflows", "models")
"""The code a workflow's replay depends on: its own, and the types its history holds."""

Behavior = Literal["auto_upgrade", "pinned"]
BEHAVIORS: dict[Behavior, VersioningBehavior] = {
    "auto_upgrade": VersioningBehavior.AUTO_UPGRADE,
    "pinned": VersioningBehavior.PINNED,
}
REGISTRATION_SECONDS = 30.0
"""How long a first worker waits for its version to be known to the server (it is once the
worker has polled) before it makes it current."""


@functools.cache
def build_id() -> str:
    """The package's version and a digest of the workflow code (read once: every stack a
    process builds asks)."""
    digest = hashlib.sha256()
    for folder in WORKFLOW_CODE:
        for path in sorted((ROOT / folder).glob("*.py")):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    try:
        version = importlib.metadata.version("durable-responses")
    except importlib.metadata.PackageNotFoundError:
        version = "0"
    return f"{version}+{digest.hexdigest()[:12]}"


class WorkerVersioning(TypedDict, total=False):
    """What each of the process's Temporal workers is given (`Worker(..., **versioning)`)."""

    deployment_config: WorkerDeploymentConfig
    """With versioning on: the version every worker of the process polls as."""
    build_id: str
    """With versioning off: only its build id. Without one, Temporal's SDK derives one by
    hashing the code of every module loaded, a quarter of a second of each worker process's
    start."""


def worker_versioning(name: str | None, build: str | None, behavior: Behavior) -> WorkerVersioning:
    if not name:
        return WorkerVersioning(build_id=build or build_id())
    return WorkerVersioning(
        deployment_config=WorkerDeploymentConfig(
            version=WorkerDeploymentVersion(deployment_name=name, build_id=build or build_id()),
            use_worker_versioning=True,
            default_versioning_behavior=BEHAVIORS[behavior],
        )
    )


async def current_build_id(client: Client, deployment_name: str) -> str | None:
    """The deployment's current version's build id; None when it has none (or is not known yet)."""
    try:
        described = await client.workflow_service.describe_worker_deployment(
            DescribeWorkerDeploymentRequest(namespace=client.namespace, deployment_name=deployment_name)
        )
    except RPCError:
        return None
    current = described.worker_deployment_info.routing_config.current_deployment_version
    return current.build_id or None


async def make_current_if_first(client: Client, config: WorkerDeploymentConfig) -> bool:
    """Make this version the deployment's current one when the deployment has none yet; True
    when it did. Later versions are an operator's to promote."""
    version = config.version
    deadline = asyncio.get_running_loop().time() + REGISTRATION_SECONDS
    while True:
        try:
            described = await client.workflow_service.describe_worker_deployment(
                DescribeWorkerDeploymentRequest(namespace=client.namespace, deployment_name=version.deployment_name)
            )
        except RPCError:
            described = None  # not known until a worker of it has polled
        if described is not None:
            routing = described.worker_deployment_info.routing_config
            if routing.current_deployment_version.build_id:
                return False
            try:
                await client.workflow_service.set_worker_deployment_current_version(
                    SetWorkerDeploymentCurrentVersionRequest(
                        namespace=client.namespace,
                        deployment_name=version.deployment_name,
                        build_id=version.build_id,
                        conflict_token=described.conflict_token,
                        identity=client.identity,
                    )
                )
                log.info(
                    "worker deployment %s: %s is its first version, now current",
                    version.deployment_name,
                    version.build_id,
                )
                return True
            except RPCError as error:
                log.debug("setting the current version: %s", error)  # not registered yet, or a race: look again
        if asyncio.get_running_loop().time() > deadline:
            log.warning(
                "worker deployment %s has no current version: promote %s with `temporal worker deployment "
                "set-current-version`",
                version.deployment_name,
                version.build_id,
            )
            return False
        await asyncio.sleep(0.5)
