"""Prompts in the store (`models/prompts.py`): a row a version, per project; one version of
each prompt is its default. A new version must follow the latest (its `version` says which
it follows), checked in the transaction that adds it, so two updates from the same version
cannot both land."""

from __future__ import annotations

import time

from models.errors import InvalidRequestError, NotFoundError
from models.ids import new_id
from models.prompts import PROMPT_ID_PREFIX, CreatePrompt, PromptVersion, UpdatePrompt
from models.quotas import ProjectQuota, ProjectQuotas
from store import quota
from store.codec import dumps, loads
from store.database import Database, Row, Transaction

COLUMNS = "id, version, prompt, variables, is_default"


def _version(row: Row) -> PromptVersion:
    return PromptVersion(
        prompt_id=row["id"],
        version=row["version"],
        prompt=row["prompt"],
        variables=loads(row["variables"]) or [],
        is_default=bool(row["is_default"]),
    )


def not_found(prompt_id: str, version: int | None = None, param: str = "prompt_id") -> NotFoundError:
    which = f"Prompt with id '{prompt_id}'" + (f" has no version {version}" if version else " not found")
    return NotFoundError(f"{which}.", param=param)


class Prompts:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def create(self, project: str, text: CreatePrompt, quotas: ProjectQuotas) -> PromptVersion:
        prompt_id = new_id(PROMPT_ID_PREFIX)
        async with self.db.write() as transaction:
            await quota.hold(transaction, self.db.dialect, ProjectQuota.PROMPTS, project)
            count = await transaction.value(
                "SELECT COUNT(*) FROM prompts WHERE project = :project AND version = 1", project=project
            )
            quota.check(quotas, ProjectQuota.PROMPTS, int(count), 1)
            await self._insert(transaction, project, prompt_id, 1, text.prompt, text.variables, is_default=True)
        return PromptVersion(
            prompt_id=prompt_id, version=1, prompt=text.prompt, variables=text.variables, is_default=True
        )

    async def update(self, project: str, prompt_id: str, update: UpdatePrompt, quotas: ProjectQuotas) -> PromptVersion:
        """A new version after the latest, which `update.version` must name."""
        async with self.db.write() as transaction:
            latest = await transaction.value(
                "SELECT MAX(version) FROM prompts WHERE id = :id AND project = :project", id=prompt_id, project=project
            )
            if latest is None:
                raise not_found(prompt_id)
            if update.version != latest:
                raise InvalidRequestError(
                    f"Invalid 'version': {update.version} is not the latest version of prompt '{prompt_id}' "
                    f"({latest}); send the latest version's number to update it.",
                    param="version",
                    code="invalid_value",
                )
            quota.check(quotas, ProjectQuota.PROMPT_VERSIONS, int(latest), 1)
            if update.set_as_default:
                await self._no_default(transaction, project, prompt_id)
            version = latest + 1
            await self._insert(
                transaction,
                project,
                prompt_id,
                version,
                update.prompt,
                update.variables,
                is_default=update.set_as_default,
            )
        return PromptVersion(
            prompt_id=prompt_id,
            version=version,
            prompt=update.prompt,
            variables=update.variables,
            is_default=update.set_as_default,
        )

    async def get(self, project: str, prompt_id: str, version: int | None = None) -> PromptVersion | None:
        """A version, or the default one."""
        which = "version = :version" if version is not None else "is_default = :default"
        async with self.db.read() as transaction:
            row = await transaction.one(
                f"SELECT {COLUMNS} FROM prompts WHERE id = :id AND project = :project AND {which}",
                id=prompt_id,
                project=project,
                **({"version": version} if version is not None else {"default": True}),
            )
        return None if row is None else _version(row)

    async def defaults(self, project: str, *, limit: int = 100) -> list[PromptVersion]:
        """The project's prompts (each as its default version), newest first."""
        async with self.db.read() as transaction:
            rows = await transaction.all(
                f"SELECT {COLUMNS} FROM prompts WHERE project = :project AND is_default = :default "
                "ORDER BY sort_key DESC, id DESC LIMIT :limit",
                project=project,
                default=True,
                limit=limit,
            )
        return [_version(row) for row in rows]

    async def versions(self, project: str, prompt_id: str) -> list[PromptVersion]:
        async with self.db.read() as transaction:
            rows = await transaction.all(
                f"SELECT {COLUMNS} FROM prompts WHERE id = :id AND project = :project ORDER BY version",
                id=prompt_id,
                project=project,
            )
        return [_version(row) for row in rows]

    async def set_default(self, project: str, prompt_id: str, version: int) -> PromptVersion:
        async with self.db.write() as transaction:
            exists = await transaction.value(
                "SELECT COUNT(*) FROM prompts WHERE id = :id AND project = :project AND version = :version",
                id=prompt_id,
                project=project,
                version=version,
            )
            if not exists:
                known = await transaction.value(
                    "SELECT COUNT(*) FROM prompts WHERE id = :id AND project = :project", id=prompt_id, project=project
                )
                raise not_found(prompt_id, version if known else None, "version" if known else "prompt_id")
            await self._no_default(transaction, project, prompt_id)
            await transaction.run(
                "UPDATE prompts SET is_default = :default WHERE id = :id AND project = :project AND version = :version",
                default=True,
                id=prompt_id,
                project=project,
                version=version,
            )
        found = await self.get(project, prompt_id, version)
        assert found is not None
        return found

    async def delete(self, project: str, prompt_id: str) -> bool:
        async with self.db.write() as transaction:
            deleted = await transaction.run(
                "DELETE FROM prompts WHERE id = :id AND project = :project", id=prompt_id, project=project
            )
        return deleted > 0

    @staticmethod
    async def _no_default(transaction: Transaction, project: str, prompt_id: str) -> None:
        await transaction.run(
            "UPDATE prompts SET is_default = :no WHERE id = :id AND project = :project",
            no=False,
            id=prompt_id,
            project=project,
        )

    @staticmethod
    async def _insert(
        transaction: Transaction,
        project: str,
        prompt_id: str,
        version: int,
        text: str,
        variables: list[str],
        *,
        is_default: bool,
    ) -> None:
        await transaction.run(
            "INSERT INTO prompts (id, version, project, prompt, variables, is_default, created_at, sort_key) "
            "VALUES (:id, :version, :project, :prompt, :variables, :is_default, :now, :sort_key)",
            id=prompt_id,
            version=version,
            project=project,
            prompt=text,
            variables=dumps(variables),
            is_default=is_default,
            now=int(time.time()),
            sort_key=time.time_ns() // 1000,
        )
