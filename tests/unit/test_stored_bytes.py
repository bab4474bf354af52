"""What a project's stored bytes count, against a real SQLite store (issue 60, H3 and M4 of the
second review): a container that ended takes no file (a file kept for it would count against
no quota and never be removed), forgetting ended containers takes their files and parts with
them, and a file counts again for each vector store that holds it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from models.errors import ContainerEndedError
from models.quotas import ProjectQuotas, QuotaExceededError
from store.containers import ContainerFileRow, ContainerRow, Containers
from store.database import Database
from store.files import FileRow, Files
from store.vector_store_rows import NewFile, VectorStoreRow
from store.vector_stores import VectorStores


async def pieces(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def container(container_id: str, project: str = "p") -> ContainerRow:
    return ContainerRow(container_id, project, "c", "1g", 20, {"type": "disabled"}, None, "running", 1, 1)


async def count(database: Database, query: str) -> int:
    async with database.read() as transaction:
        return int(await transaction.value(query))


async def test_a_container_that_ended_takes_no_file(database: Database):
    containers, files = Containers(database), Files(database)
    await containers.create(container("cntr_a"), ProjectQuotas())
    await files.write_parts("cfile_a", pieces(b"kept"))
    await containers.add_file(ContainerFileRow("cfile_a", "cntr_a", "/mnt/data/a", 4, "user", 1, True), ProjectQuotas())
    assert await containers.end("cntr_a", "expired")
    await files.write_parts("cfile_b", pieces(b"late"))
    with pytest.raises(ContainerEndedError) as refused:
        await containers.add_file(
            ContainerFileRow("cfile_b", "cntr_a", "/mnt/data/b", 4, "user", 1, True), ProjectQuotas()
        )
    assert refused.value.status_code == 409 and refused.value.param == "container_id"
    assert await count(database, "SELECT count(*) FROM container_files") == 0  # its files left with it


async def test_forgetting_ended_containers_takes_their_files_and_orphans_with_them(database: Database):
    containers, files = Containers(database), Files(database)
    for name in ("cntr_old", "cntr_live"):
        await containers.create(container(name), ProjectQuotas())
        await files.write_parts(f"cfile_{name}", pieces(b"x" * 10))
        await containers.add_file(
            ContainerFileRow(f"cfile_{name}", name, "/mnt/data/x", 10, "user", 1, True), ProjectQuotas()
        )
    async with database.write() as transaction:  # a file an earlier chore left without its container
        await transaction.run(
            "INSERT INTO container_files (id, container_id, path, bytes, source, created_at, synced, sort_key) "
            "VALUES ('cfile_orphan', 'cntr_gone', '/mnt/data/o', 10, 'user', 1, 1, 1)"
        )
    await files.write_parts("cfile_orphan", pieces(b"o" * 10))
    assert await containers.end("cntr_old", "deleted")
    assert await containers.forget_ended(before=2**40) == 1
    assert await count(database, "SELECT count(*) FROM container_files") == 1
    assert await count(database, "SELECT count(*) FROM file_parts WHERE file_id != 'cfile_cntr_live'") == 0
    assert [part async for part in files.parts("cfile_cntr_live")] == [b"x" * 10]


async def test_a_file_counts_again_for_each_vector_store_that_holds_it(database: Database):
    quotas = ProjectQuotas(max_file_bytes=250)
    files, stores = Files(database), VectorStores(database)
    await files.write_parts("file_a", pieces(b"a" * 100))
    await files.create(FileRow("file_a", "p", "a.txt", "assistants", 100, 1), quotas)
    new = [NewFile("file_a", {}, {"type": "auto"})]
    await stores.create(VectorStoreRow("vs_1", "p", "one", {}, 1, 1, None, "e"), new, quotas, param="file_ids")
    await stores.create(VectorStoreRow("vs_2", "p", "two", {}, 1, 1, None, "e"), [], quotas)
    with pytest.raises(QuotaExceededError) as refused:  # 100 + 100 + 100 > 250
        await stores.add_files("vs_2", new, quotas, param="file_id")
    assert refused.value.param == "file_id" and "PROJECT_MAX_FILE_BYTES" in str(refused.value)
    assert (await stores.add_files("vs_1", new, quotas, param="file_id"))[
        0
    ].fresh is False  # held already: no new bytes
