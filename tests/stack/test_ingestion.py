"""Ingestion survives what it must: a worker killed (SIGKILL) in the middle of 200 files
loses none and embeds no chunk twice but those of the batches it was embedding; an
embeddings backend that answers 429 for a while is waited out, and nothing fails; a large
file's history stays small (it continues as new), an ingestion started again resumes from its
chunks, and a file deleted while it is read leaves no chunk behind. The worker
is a real `durable-responses worker` process; the embeddings come from the scripted
backend's `/v1/embeddings` (`EMBEDDING_MODEL` names a model it serves)."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import openai
import pytest
from temporalio.client import WorkflowFailureError

from api.ingestions import Ingestions
from models.ingestion import INGESTION_WORKFLOW, FileIngestionInput, ingestion_workflow_id
from models.quotas import ProjectQuotas
from models.vector_stores import chunking_as_stored
from models.workflow_io import ingestion_task_queue
from store.vector_store_rows import NewFile
from tests.support.histories import keep_recording, replayer
from tests.support.processes import kill, spawn_worker
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import EmptyStore, Stack, running_stack
from worker.roles import opened_store
from worker.vector_store_chores import VectorStoreChores
from workflows import patches

EMBEDDINGS = "embed-test"
CONCURRENT = 8
"""Ingestion steps one worker runs at once: at most this many batches are in flight at a kill."""


@pytest.fixture
async def api_only(temporal_address: str, backend: ScriptedBackend, store: EmptyStore) -> AsyncIterator[Stack]:
    async with running_stack(
        temporal_address, backend, store, with_worker=False, task_timeout_seconds=2, embedding_model=EMBEDDINGS
    ) as stack:
        yield stack


def worker(stack: Stack, log: Path | None = None):  # noqa: ANN201
    return spawn_worker(
        stack, log=log, env={"EMBEDDING_MODEL": EMBEDDINGS, "INGESTION_CONCURRENT_ACTIVITIES": str(CONCURRENT)}
    )


async def until_completed(sdk: openai.AsyncOpenAI, store_id: str, count: int, running, log: Path):  # noqa: ANN001, ANN201
    """Until `count` files are done; fails (with the worker's log) when the worker exits, or when
    nothing more gets done for a minute (a loaded machine is slow, not stuck)."""
    done, moved_at = -1, time.monotonic()
    while (now := (await sdk.vector_stores.retrieve(store_id)).file_counts.completed) < count:
        if now != done:
            done, moved_at = now, time.monotonic()
        assert running.poll() is None, f"the worker exited: {log.read_text()[-2000:]}"
        assert time.monotonic() - moved_at < 60, f"ingestion stalled at {now} files: {log.read_text()[-2000:]}"
        await asyncio.sleep(0.05)


async def notes(sdk: openai.AsyncOpenAI, count: int, tag: str) -> tuple[list[str], list[str]]:
    """`count` one-chunk files, each text its own; their ids and texts."""
    texts = [f"Note {n} of {tag}: the comet returns every {n + 3} years." for n in range(count)]
    ids = await asyncio.gather(
        *(sdk.files.create(file=(f"note{n}.txt", text.encode()), purpose="assistants") for n, text in enumerate(texts))
    )
    return [file.id for file in ids], texts


async def settled(sdk: openai.AsyncOpenAI, store_id: str, seconds: float):  # noqa: ANN201
    deadline = time.monotonic() + seconds
    while (store := await sdk.vector_stores.retrieve(store_id)).status != "completed":
        assert time.monotonic() < deadline, f"still {store.file_counts}"
        await asyncio.sleep(0.5)
    return store


async def test_a_worker_killed_mid_ingestion_loses_no_file_and_embeds_no_chunk_twice(
    api_only: Stack, backend: ScriptedBackend, model: str, tmp_path: Path
):
    sdk = api_only.sdk(timeout=60)
    tag = uuid.uuid4().hex
    file_ids, texts = await notes(sdk, 200, tag)
    backend.embedding_delay = 0.1
    log = tmp_path / "worker.log"
    first = worker(api_only, log)
    second = None
    try:
        batch = await sdk.vector_stores.create(name="comets", file_ids=file_ids)
        await until_completed(sdk, batch.id, 40, first, log)
        kill(first)
        killed_at = (await sdk.vector_stores.retrieve(batch.id)).file_counts
        assert killed_at.in_progress > 0, "every file was done before the kill: nothing was tested"
        second = worker(api_only)
        store = await settled(sdk, batch.id, 120)
        # The tool's query is embedded by the same model, through the worker's upstream gate.
        backend.script(
            model,
            [Reply(tool_calls=[("file_search", {"query": f"Note 42 of {tag}"})]), Reply(text="Every 45 years [1].")],
        )
        answered = await sdk.responses.create(
            model=model,
            input="When does comet 42 return?",
            tools=[{"type": "file_search", "vector_store_ids": [batch.id]}],
            include=["file_search_call.results"],
        )
    finally:
        backend.embedding_delay = 0.0
        kill(first)
        kill(second)
    assert store.file_counts.completed == 200 and store.file_counts.failed == 0
    seen = [backend.embedded[text] for text in texts]
    assert min(seen) == 1, "a chunk was never embedded"
    assert sum(seen) - len(texts) <= CONCURRENT, f"{sum(seen) - len(texts)} chunks embedded twice"
    found = await sdk.vector_stores.search(batch.id, query=f"Note 117 of {tag}", max_num_results=1)
    assert found.data[0].content[0].text == texts[117]
    assert answered.output[0].results[0].text == texts[42]
    assert answered.output[1].content[0].annotations[0].filename == "note42.txt"
    assert backend.embedded[f"Note 42 of {tag}"] == 1  # the query, by the backend's model
    await sdk.close()


@pytest.mark.one_store  # a minute of the workflow's and the gate's waiting (budgets run on both stores elsewhere)
async def test_an_embeddings_backend_at_its_rate_limit_is_waited_out(api_only: Stack, backend: ScriptedBackend):
    sdk = api_only.sdk(timeout=60)
    file_ids, texts = await notes(sdk, 20, uuid.uuid4().hex)
    backend.refuse_embeddings(60)
    refused_before = backend.embedding_calls
    running = worker(api_only)
    try:
        store = await sdk.vector_stores.create(name="limited", file_ids=file_ids)
        await asyncio.sleep(5)
        assert (await sdk.vector_stores.retrieve(store.id)).file_counts.in_progress == 20  # waiting, not failed
        store = await settled(sdk, store.id, 180)
    finally:
        kill(running)
    assert store.file_counts.completed == 20 and store.file_counts.failed == 0
    assert backend.embedding_calls - refused_before > 20, "the backend never refused"
    assert all(backend.embedded[text] == 1 for text in texts)
    await sdk.close()


async def test_a_file_whose_ingestion_was_never_started_is_ingested_by_a_sweep(stack: Stack):
    """As if the API died between writing a file's row and starting its workflow."""
    sdk = stack.sdk(timeout=60)
    uploaded = await sdk.files.create(file=("orphan.md", b"an orphaned note about lighthouses"), purpose="assistants")
    store = await sdk.vector_stores.create(name="orphans")
    async with opened_store(stack.settings) as repository:
        await repository.vector_stores.add_files(
            store.id, [NewFile(uploaded.id, {}, chunking_as_stored(None))], ProjectQuotas()
        )
        await asyncio.sleep(2)
        assert (await sdk.vector_stores.retrieve(store.id)).file_counts.in_progress == 1  # nothing runs it
        chores = VectorStoreChores(
            repository.vector_stores, Ingestions(stack.client, stack.settings.task_queue), grace_seconds=-1
        )
        assert await chores.restart_unfinished() >= 1
        assert await chores.restart_unfinished() >= 0  # again, while it runs: no second ingestion
    done = await settled(sdk, store.id, 60)
    assert done.file_counts.completed == 1
    await sdk.close()


async def test_a_store_idle_past_its_expires_after_is_deleted(stack: Stack):
    sdk = stack.sdk(timeout=60)
    store = await sdk.vector_stores.create(name="brief", expires_after={"anchor": "last_active_at", "days": 1})
    assert store.expires_after.days == 1 and store.expires_at == store.last_active_at + 86400
    kept = await sdk.vector_stores.create(name="kept", expires_after={"anchor": "last_active_at", "days": 1})
    async with opened_store(stack.settings) as repository:
        await repository.vector_stores.update(store.id, {"last_active_at": int(time.time()) - 2 * 86400})
        chores = VectorStoreChores(repository.vector_stores, Ingestions(stack.client, stack.settings.task_queue))
        assert await chores.expire() >= 1
    with pytest.raises(openai.NotFoundError):
        await sdk.vector_stores.retrieve(store.id)
    assert (await sdk.vector_stores.retrieve(kept.id)).name == "kept"
    await sdk.close()


# ---- a large file: a history that stays small, and an ingestion that resumes -------------------


def many_chunks(count: int) -> tuple[bytes, list[str]]:
    """A text whose static chunking (100 tokens, no overlap) makes exactly `count` chunks, each
    its own (50 words of 8 letters, 2 tokens each, none seen before)."""
    first = random.randrange(26**7)

    def word(index: int) -> str:
        letters = []
        for _ in range(8):
            index, letter = divmod(index, 26)
            letters.append(chr(ord("a") + letter))
        return "".join(letters)

    chunks = [" ".join(word(first + 50 * n + k) for k in range(50)) for n in range(count)]
    return " ".join(chunks).encode(), chunks


STATIC_100 = {"type": "static", "static": {"max_chunk_size_tokens": 100, "chunk_overlap_tokens": 0}}


async def ingestion_of(stack: Stack, sdk: openai.AsyncOpenAI, content: bytes, **options: object):  # noqa: ANN201
    """A store holding the file's row, in progress, and its ingestion started here (not by the
    API) with `options` for its input."""
    uploaded = await sdk.files.create(file=("large.txt", content), purpose="assistants")
    store = await sdk.vector_stores.create(name="large")
    async with opened_store(stack.settings) as repository:
        await repository.vector_stores.add_files(store.id, [NewFile(uploaded.id, {}, STATIC_100)], ProjectQuotas())
    handle = await stack.client.start_workflow(
        INGESTION_WORKFLOW,
        FileIngestionInput(
            vector_store_id=store.id, file_id=uploaded.id, project="", embedding_model=EMBEDDINGS, **options
        ),
        id=ingestion_workflow_id(store.id, uploaded.id),
        task_queue=ingestion_task_queue(stack.settings.task_queue),
        memo=patches.start_memo(),  # as the API starts one
    )
    return store, uploaded, handle


async def test_a_large_file_continues_as_new_and_embeds_each_chunk_once(api_only: Stack, backend: ScriptedBackend):
    sdk = api_only.sdk(timeout=60)
    content, chunks = many_chunks(300)  # five batches of 64
    running = worker(api_only)
    try:
        store, _, handle = await ingestion_of(api_only, sdk, content, batches_per_run=2)
        assert await handle.result() == "completed"
        done = await settled(sdk, store.id, 60)
    finally:
        kill(running)
    assert done.file_counts.completed == 1
    assert [backend.embedded[text] for text in chunks] == [1] * len(chunks)
    runs = [run async for run in api_only.client.list_workflows(f"WorkflowId = '{handle.id}'")]
    assert len(runs) == 3, [run.status for run in runs]  # 2 + 2 + 1 batches
    for run in runs:
        history = await api_only.client.get_workflow_handle(handle.id, run_id=run.run_id).fetch_history()
        assert len(history.events) < 60
        assert (await replayer().replay_workflow(history)).replay_failure is None
    await keep_recording("file_ingestion_continued", api_only.client, handle.id, runs[-1].run_id)
    await sdk.close()


async def test_an_ingestion_started_again_resumes_from_its_chunks(api_only: Stack, backend: ScriptedBackend):
    """As when Temporal ends a workflow (a history past its limits, an operator's terminate) and
    the sweep starts the file's ingestion again: the file is not read again, and only what has
    no embedding is embedded."""
    sdk = api_only.sdk(timeout=60)
    content, chunks = many_chunks(400)
    backend.embedding_delay = 0.3
    running = worker(api_only)
    try:
        store, uploaded, handle = await ingestion_of(api_only, sdk, content)
        deadline = time.monotonic() + 60
        while sum(backend.embedded[text] for text in chunks) < 128:
            assert time.monotonic() < deadline, "the ingestion did not get going"
            await asyncio.sleep(0.05)
        await handle.terminate("as Temporal ends a workflow past its history's limits")
        backend.embedding_delay = 0.0
        async with opened_store(api_only.settings) as repository:
            assert (await repository.vector_stores.file(store.id, uploaded.id)).chunk_count == len(chunks)
            chores = VectorStoreChores(
                repository.vector_stores, Ingestions(api_only.client, api_only.settings.task_queue), grace_seconds=-1
            )
            assert await chores.restart_unfinished() >= 1
        done = await settled(sdk, store.id, 60)
        resumed = api_only.client.get_workflow_handle(handle.id)
        assert await resumed.result() == "completed"
    finally:
        backend.embedding_delay = 0.0
        kill(running)
    assert done.file_counts.completed == 1
    seen = [backend.embedded[text] for text in chunks]
    assert min(seen) == 1, "a chunk was never embedded"
    # Read again, every chunk would have been embedded twice; resumed, at most the batch in flight.
    assert sum(seen) - len(chunks) <= 64, f"{sum(seen) - len(chunks)} chunks embedded twice"
    assert (await replayer().replay_workflow(await resumed.fetch_history())).replay_failure is None
    await keep_recording("file_ingestion_resumed", api_only.client, resumed.id)
    await sdk.close()


async def test_a_file_deleted_while_it_is_read_leaves_no_chunk(api_only: Stack):
    """Deleting a file 0.4 s after adding it to a store once left 3,150 chunks written after
    the delete: now its ingestion is cancelled, and a batch written after the delete finds the
    file's row gone and writes nothing."""
    sdk = api_only.sdk(timeout=60)
    content, _ = many_chunks(3000)
    uploaded = await sdk.files.create(file=("doomed.txt", content), purpose="assistants")
    store = await sdk.vector_stores.create(name="doomed")
    running = worker(api_only)
    try:
        await sdk.vector_stores.files.create(store.id, file_id=uploaded.id, chunking_strategy=STATIC_100)
        await asyncio.sleep(0.4)
        await sdk.files.delete(uploaded.id)
        handle = api_only.client.get_workflow_handle(ingestion_workflow_id(store.id, uploaded.id))
        with contextlib.suppress(WorkflowFailureError):
            await asyncio.wait_for(handle.result(), 60)
        await asyncio.sleep(1)
    finally:
        kill(running)
    async with opened_store(api_only.settings) as repository:
        async with repository.db.read() as transaction:
            left = await transaction.value(
                "SELECT count(*) FROM vector_store_chunks WHERE file_id = :file", file=uploaded.id
            )
    assert left == 0
    await sdk.close()
