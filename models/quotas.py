"""What one project may keep: files, their bytes, vector stores, files in one store, webhook
endpoints, running containers and files in one container, prompts and versions of one prompt. The server's settings give each a limit (`access/quotas.py` reads them); the store
checks them in the transaction that adds (`store/quota.py`), so two requests at once cannot
both take the last place. Past one, the request gets a 400 `limit_exceeded` that names the
limit and its setting (`QuotaExceededError`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from models.errors import InvalidRequestError, StartupError

GiB = 1024 * 1024 * 1024


class ProjectQuota(str, Enum):
    FILES = "files"
    FILE_BYTES = "file_bytes"
    VECTOR_STORES = "vector_stores"
    FILES_PER_VECTOR_STORE = "files_per_vector_store"
    WEBHOOK_ENDPOINTS = "webhook_endpoints"
    CONTAINERS = "containers"
    CONTAINER_FILES = "container_files"
    PROMPTS = "prompts"
    PROMPT_VERSIONS = "prompt_versions"

    @property
    def field(self) -> str:
        """Its field in `ProjectQuotas`."""
        return {
            ProjectQuota.FILES_PER_VECTOR_STORE: "max_files_per_vector_store",
            ProjectQuota.CONTAINER_FILES: "max_files_per_container",
            ProjectQuota.PROMPT_VERSIONS: "max_versions_per_prompt",
        }.get(self, "max_" + self.value)

    @property
    def setting(self) -> str:
        """The environment variable that sets it."""
        return {
            ProjectQuota.FILES: "PROJECT_MAX_FILES",
            ProjectQuota.FILE_BYTES: "PROJECT_MAX_FILE_BYTES",
            ProjectQuota.VECTOR_STORES: "PROJECT_MAX_VECTOR_STORES",
            ProjectQuota.FILES_PER_VECTOR_STORE: "VECTOR_STORE_MAX_FILES",
            ProjectQuota.WEBHOOK_ENDPOINTS: "PROJECT_MAX_WEBHOOK_ENDPOINTS",
            ProjectQuota.CONTAINERS: "PROJECT_MAX_CONTAINERS",
            ProjectQuota.CONTAINER_FILES: "CONTAINER_MAX_FILES",
            ProjectQuota.PROMPTS: "PROJECT_MAX_PROMPTS",
            ProjectQuota.PROMPT_VERSIONS: "PROMPT_MAX_VERSIONS",
        }[self]

    def described(self, limit: int) -> str:
        """The limit in words: "at most 10000 files"."""
        if self is ProjectQuota.FILE_BYTES:
            return f"files of at most {limit} bytes together"
        things = {
            ProjectQuota.FILES: "files",
            ProjectQuota.VECTOR_STORES: "vector stores",
            ProjectQuota.FILES_PER_VECTOR_STORE: "files in one vector store",
            ProjectQuota.WEBHOOK_ENDPOINTS: "webhook endpoints",
            ProjectQuota.CONTAINERS: "running containers",
            ProjectQuota.CONTAINER_FILES: "files in one container",
            ProjectQuota.PROMPTS: "prompts",
            ProjectQuota.PROMPT_VERSIONS: "versions of one prompt",
        }[self]
        return f"at most {limit} {things}"


@dataclass(frozen=True)
class ProjectQuotas:
    max_files: int = 10_000
    max_file_bytes: int = 10 * GiB
    max_vector_stores: int = 1_000
    max_files_per_vector_store: int = 10_000
    max_webhook_endpoints: int = 20
    max_containers: int = 20
    max_files_per_container: int = 1_000
    max_prompts: int = 1_000
    max_versions_per_prompt: int = 100

    def limit(self, quota: ProjectQuota) -> int:
        limit: int = getattr(self, quota.field)
        return limit

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ProjectQuotas:
        """`PROJECT_MAX_FILES` and the rest, each a whole number of at least 1."""
        defaults, given = cls(), {}
        for quota in ProjectQuota:
            value = environ.get(quota.setting, "").strip()
            if value and not value.lstrip("-").isdigit():
                raise StartupError(f"{quota.setting} must be a whole number, not {value[:40]!r}")
            given[quota.field] = int(value) if value else defaults.limit(quota)
            if given[quota.field] < 1:
                raise StartupError(f"{quota.setting} must be at least 1")
        if given["max_webhook_endpoints"] > MAX_WEBHOOK_ENDPOINTS:
            raise StartupError(f"PROJECT_MAX_WEBHOOK_ENDPOINTS may be at most {MAX_WEBHOOK_ENDPOINTS}")
        return cls(**given)


MAX_WEBHOOK_ENDPOINTS = 100
"""The most `PROJECT_MAX_WEBHOOK_ENDPOINTS` may allow: a project's endpoints travel in each of its
background responses' workflow input, which must stay small."""


class QuotaExceededError(InvalidRequestError):
    """A project's quota (`models/quotas.py`) is reached: the message names it and its setting."""

    def __init__(self, quota: ProjectQuota, limit: int, *, param: str | None = None) -> None:
        super().__init__(
            f"This project may keep {quota.described(limit)} ({quota.setting}), and this would go past it: "
            "delete some first, or ask the operator to raise the limit.",
            param=param,
            code="limit_exceeded",
        )
        self.quota = quota
        self.limit = limit
