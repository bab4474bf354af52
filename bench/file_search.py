"""File search: how fast files are ingested, and how fast a vector store is searched.

    python -m bench.file_search [--files 100] [--sizes 10000,100000] [--queries 20]

- **Ingestion**: `durable-responses dev` (SQLite) ingests `--files` documents of about
  3,000 words each, embedded by the scripted backend's `/v1/embeddings` (`EMBEDDING_MODEL`),
  then by the lexical embedder that ships in the package: chunks embedded per second, from
  the vector store's creation to its `completed`.
- **Search**: a vector store of 10,000 and 100,000 chunks (lexical embeddings, 256
  dimensions), searched through `file_search.searching.search` as the API and the tool do: the
  median and 95th percentile of `--queries` searches on SQLite with sqlite-vec, on SQLite
  with the Python fallback (10,000 only: it is the slow path), and on PostgreSQL with the
  exact search in SQL (no pgvector).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path

import openai

from bench.processes import Backend, Dev
from demo.lexical_embedder import LEXICAL_MODEL, lexical_vector
from file_search.embedder import Embedder
from file_search.library import Library
from file_search.searching import search
from models.chunks import Chunk
from models.ids import new_id
from models.quotas import ProjectQuotas
from store import vector_functions
from store.opening import open_database
from store.repository import ResponseRepository
from store.vector_store_rows import VectorStoreRow
from upstream.clients import Upstreams
from upstream.registry import ModelRegistry

WORDS = (
    "durable workflow temporal activity retry history payload worker queue signal update timer schedule "
    "vector embedding chunk search ranking filter attribute citation response stream event model token "
    "context window budget tenant project approval webhook inbox latency throughput benchmark store sqlite "
    "postgres index cosine similarity keyword hybrid lexical comet galaxy tomato sourdough lighthouse"
).split()


def document(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) + (str(rng.randrange(1000)) if rng.random() < 0.2 else "") for _ in range(words))


def ingestion(files: int, embedding_model: str | None) -> tuple[int, float]:
    """(chunks, seconds) for `files` documents into one vector store on `dev`."""
    backend = Backend.start(0)
    rng = random.Random(7)
    env = {"EMBEDDING_MODEL": embedding_model} if embedding_model else {}
    try:
        with tempfile.TemporaryDirectory() as data_dir:
            dev = Dev.start(data_dir, backend, env=env)
            try:
                client = openai.OpenAI(base_url=f"{dev.url}/v1", api_key="bench", timeout=120)
                ids = [
                    client.files.create(file=(f"doc{n}.txt", document(rng, 3000).encode()), purpose="assistants").id
                    for n in range(files)
                ]
                began = time.monotonic()
                store = client.vector_stores.create(name="bench", file_ids=ids)
                while (store := client.vector_stores.retrieve(store.id)).status != "completed":
                    time.sleep(0.1)
                seconds = time.monotonic() - began
                assert store.file_counts.completed == files, store.file_counts
                chunks = sum(
                    len(client.vector_stores.files.content(file_id, vector_store_id=store.id).data) for file_id in ids
                )
            finally:
                dev.stop()
    finally:
        backend.stop()
    return chunks, seconds


async def filled(url: str, chunks: int) -> tuple[ResponseRepository, VectorStoreRow]:
    db = open_database(url)
    await db.migrate()
    repository = ResponseRepository(db)
    now = int(time.time())
    store = VectorStoreRow(new_id("vs"), "", "bench", {}, now, now, None, LEXICAL_MODEL)
    await repository.vector_stores.create(store, [], ProjectQuotas())
    rng = random.Random(11)
    per_file = 1000
    for start in range(0, chunks, per_file):
        file_id = f"file_{start}"
        texts = [document(rng, 60) for _ in range(min(per_file, chunks - start))]
        async with db.write() as transaction:
            await transaction.run(
                "INSERT INTO vector_store_files (vector_store_id, file_id, status, attributes, chunking_strategy, "
                "usage_bytes, created_at, sort_key) VALUES (:store, :file, 'in_progress', '{}', '{}', 0, :now, :key)",
                store=store.id,
                file=file_id,
                now=now,
                key=start,
            )
        await repository.chunks.add(store.id, file_id, 0, [Chunk(text, 80) for text in texts])
        await repository.chunks.embed(
            store.id, file_id, {position: lexical_vector(text) for position, text in enumerate(texts)}
        )
        await repository.vector_stores.settle(store.id, file_id, "completed")
    return repository, store


async def search_times(url: str, chunks: int, queries: int) -> list[float]:
    repository, store = await filled(url, chunks)
    library = Library(repository.vector_stores, repository.chunks, repository.files)
    embedder = Embedder(LEXICAL_MODEL, ModelRegistry.single(""), Upstreams())
    rng = random.Random(13)
    times = []
    try:
        for _ in range(queries):
            query = document(rng, 6)
            began = time.perf_counter()
            hits = await search(library, embedder, [store], [query], project="", max_num_results=10)
            times.append(time.perf_counter() - began)
            assert hits, "a search found nothing"
    finally:
        await repository.db.close()
    return times


def summary(times: list[float]) -> str:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"p50 {statistics.median(ordered) * 1000:8.1f} ms   p95 {p95 * 1000:8.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--skip-ingestion", action="store_true")
    options = parser.parse_args()
    if not options.skip_ingestion:
        for label, model in (("scripted backend /v1/embeddings", "bench-embed"), ("lexical (in process)", None)):
            chunks, seconds = ingestion(options.files, model)
            print(
                f"ingestion, {label:32} {options.files} files, {chunks} chunks in {seconds:6.1f} s: "
                f"{chunks / seconds:7.1f} chunks/s",
                flush=True,
            )
    sizes = [int(size) for size in options.sizes.split(",")]
    with tempfile.TemporaryDirectory() as data_dir:
        for size in sizes:
            if vector_functions.extension_loadable():
                url = f"sqlite:///{Path(data_dir) / f'vec-{size}.db'}"
                print(
                    f"search, {size:>7} chunks, SQLite + sqlite-vec:      "
                    f"{summary(asyncio.run(search_times(url, size, options.queries)))}",
                    flush=True,
                )
            if size <= 10_000:
                loadable = vector_functions.extension_loadable
                vector_functions.extension_loadable = lambda: False
                try:
                    url = f"sqlite:///{Path(data_dir) / f'py-{size}.db'}"
                    print(
                        f"search, {size:>7} chunks, SQLite, Python fallback: "
                        f"{summary(asyncio.run(search_times(url, size, options.queries)))}",
                        flush=True,
                    )
                finally:
                    vector_functions.extension_loadable = loadable
            from tests.support.postgres import PostgresServer

            why_not = PostgresServer.unavailable()
            if why_not:
                print(f"search on PostgreSQL skipped: {why_not}")
                continue
            server = PostgresServer()
            server.start()
            try:
                url = server.create_database()
                print(
                    f"search, {size:>7} chunks, PostgreSQL, exact SQL:     "
                    f"{summary(asyncio.run(search_times(url, size, options.queries)))}",
                    flush=True,
                )
            finally:
                server.stop()


if __name__ == "__main__":
    main()
