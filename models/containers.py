"""Containers as OpenAI's API takes them (`/v1/containers`, and the `container` of a
`code_interpreter` tool or the `environment` of a `shell` one): their memory, expiry, network
policy and first files."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from models.public_suffixes import is_public_suffix
from models.unsupported import UnsupportedParameter

GiB = 1024 * 1024 * 1024
MEMORY_LIMITS: dict[str, int] = {"1g": GiB, "4g": 4 * GiB, "16g": 16 * GiB, "64g": 64 * GiB}
MemoryLimit = Literal["1g", "4g", "16g", "64g"]
DEFAULT_MEMORY_LIMIT: MemoryLimit = "1g"
DEFAULT_EXPIRY_MINUTES = 20
"""A container idle this long is removed, as OpenAI's are by default."""
MAX_EXPIRY_MINUTES = 7 * 24 * 60
MAX_FILE_IDS = 100
MAX_DOMAINS = 50
_DOMAIN = re.compile(r"^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _domain(value: str) -> str:
    lowered = value.strip().lower().rstrip(".")
    if not _DOMAIN.match(lowered):
        raise ValueError(f"{value!r} is not a domain name")
    if is_public_suffix(lowered):
        raise ValueError(f"{value!r} is a public suffix (anyone may register a name under it), not a domain")
    return lowered


Domain = Annotated[str, Field(max_length=253), AfterValidator(_domain)]


class ContainerExpiresAfter(Body):
    anchor: Literal["last_active_at"]
    minutes: int = Field(ge=1, le=MAX_EXPIRY_MINUTES)


class NetworkDisabled(Body):
    type: Literal["disabled"]


class NetworkAllowlist(Body):
    type: Literal["allowlist"]
    allowed_domains: list[Domain] = Field(min_length=1, max_length=MAX_DOMAINS)
    domain_secrets: Any = None

    @model_validator(mode="after")
    def _no_secrets(self) -> NetworkAllowlist:
        if self.domain_secrets is not None:
            raise UnsupportedParameter("network_policy.domain_secrets", "domain secrets are not supported here")
        return self


NetworkPolicy = Annotated[NetworkDisabled | NetworkAllowlist, Field(discriminator="type")]

FileIds = Annotated[list[Annotated[str, Field(min_length=1, max_length=80)]], Field(max_length=MAX_FILE_IDS)]


class CreateContainer(Body):
    name: str = Field(min_length=1, max_length=256)
    expires_after: ContainerExpiresAfter | None = None
    file_ids: FileIds | None = None
    memory_limit: MemoryLimit = DEFAULT_MEMORY_LIMIT
    network_policy: NetworkPolicy | None = None
    skills: Any = None

    @model_validator(mode="after")
    def _no_skills(self) -> CreateContainer:
        if self.skills is not None:
            raise UnsupportedParameter("skills", "skills are not supported here")
        return self


class ContainerFileFromId(Body):
    file_id: str = Field(min_length=1, max_length=80)


def network_policy_as_stored(policy: NetworkDisabled | NetworkAllowlist | None) -> dict[str, Any]:
    if isinstance(policy, NetworkAllowlist):
        return {"type": "allowlist", "allowed_domains": policy.allowed_domains}
    return {"type": "disabled"}
