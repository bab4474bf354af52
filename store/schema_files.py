"""The tables of what a project uploads and runs: files (and their bytes, in parts), vector
stores with their files and chunks, containers with their files. Portable SQL only; a change
here needs a migration too (`store/schema.py`)."""

from sqlalchemy import JSON, BigInteger, Boolean, Column, Index, Integer, LargeBinary, String, Table, Text

from store.metadata import EMBEDDING, metadata

# ---- Files and vector stores (`store/files.py`, `store/vector_stores.py`, `store/chunks.py`) ----

# An uploaded file (at most `file_search.limits.IngestionLimits.max_file_bytes`); its bytes are
# in `file_parts`.
files = Table(
    "files",
    metadata,
    Column("id", String(80), primary_key=True),
    Column("project", String(80), nullable=False),
    Column("filename", String(512), nullable=False),
    Column("purpose", String(40), nullable=False),
    Column("bytes", BigInteger, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=True),
    Column("sort_key", BigInteger, nullable=False),
)
Index("ix_files_project_sort_key", files.c.project, files.c.sort_key, files.c.id)

# A file's bytes, in parts of at most `store.files.PART_BYTES`, written and read one at a time.
# Parts whose file has no row (an upload that died half-way) are removed a while after
# `written_at` (`store/files.py`).
file_parts = Table(
    "file_parts",
    metadata,
    Column("file_id", String(80), primary_key=True),
    Column("part", Integer, primary_key=True),
    Column("data", LargeBinary, nullable=False),
    Column("written_at", BigInteger, nullable=False),
)
# The sweep finds old parts by this, never reading a part's bytes to learn its age.
Index("ix_file_parts_written_at", file_parts.c.written_at)

vector_stores = Table(
    "vector_stores",
    metadata,
    Column("id", String(80), primary_key=True),
    Column("project", String(80), nullable=False),
    Column("name", String(256), nullable=False),
    Column("metadata", JSON, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("last_active_at", BigInteger, nullable=False),
    Column("expires_after_days", Integer, nullable=True),
    Column("sort_key", BigInteger, nullable=False),
    # The embeddings model its chunks were embedded with; a search embeds its query with it.
    Column("embedding_model", String(200), nullable=False),
)
Index("ix_vector_stores_project_sort_key", vector_stores.c.project, vector_stores.c.sort_key, vector_stores.c.id)

# A file in a vector store, and where its ingestion (`workflows/ingestion.py`) stands.
vector_store_files = Table(
    "vector_store_files",
    metadata,
    Column("vector_store_id", String(80), primary_key=True),
    Column("file_id", String(80), primary_key=True),
    Column("batch_id", String(80), nullable=True),
    Column("status", String(20), nullable=False),
    Column("last_error", JSON, nullable=True),
    Column("attributes", JSON, nullable=False),
    Column("chunking_strategy", JSON, nullable=False),
    Column("usage_bytes", BigInteger, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("sort_key", BigInteger, nullable=False),
    # How many chunks the file made, once it is chunked (NULL until then).
    Column("chunk_count", Integer, nullable=True),
)
Index("ix_vector_store_files_batch_id", vector_store_files.c.batch_id)
Index(
    "ix_vector_store_files_sort_key",
    vector_store_files.c.vector_store_id,
    vector_store_files.c.sort_key,
    vector_store_files.c.file_id,
)

vector_store_file_batches = Table(
    "vector_store_file_batches",
    metadata,
    Column("id", String(80), primary_key=True),
    Column("vector_store_id", String(80), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("cancelled", Boolean, nullable=False),
)

# A file's chunks in one vector store, each with its embedding once embedded: float32 bytes on
# SQLite (read by sqlite-vec's functions), `real[]` on PostgreSQL (an exact search in SQL).
vector_store_chunks = Table(
    "vector_store_chunks",
    metadata,
    Column("vector_store_id", String(80), primary_key=True),
    Column("file_id", String(80), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("text", Text, nullable=False),
    Column("tokens", Integer, nullable=False),
    Column("embedding", EMBEDDING, nullable=True),
)

# ---- Containers (`store/containers.py`) -----------------------------------------------------

# A container: where it lives (`host`, a worker host's id, once a command needed it), its limits,
# and `status` (running, expired or deleted: a host removes what it keeps of the last two).
containers = Table(
    "containers",
    metadata,
    Column("id", String(80), primary_key=True),
    Column("project", String(80), nullable=False),
    Column("name", String(256), nullable=False),
    Column("memory_limit", String(8), nullable=False),
    Column("expires_after_minutes", Integer, nullable=False),
    Column("network_policy", JSON, nullable=False),
    Column("host", String(80), nullable=True),
    Column("status", String(20), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("last_active_at", BigInteger, nullable=False),
    Column("sort_key", BigInteger, nullable=False),
)
Index("ix_containers_project_sort_key", containers.c.project, containers.c.sort_key, containers.c.id)
Index("ix_containers_host", containers.c.host)

# A container's file: its path under /mnt/data, its bytes in `file_parts`; `synced` once its
# host has it on disk (an upload waits until then).
container_files = Table(
    "container_files",
    metadata,
    Column("id", String(80), primary_key=True),
    Column("container_id", String(80), nullable=False),
    Column("path", String(1024), nullable=False),
    Column("bytes", BigInteger, nullable=False),
    Column("source", String(20), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("synced", Boolean, nullable=False),
    Column("sort_key", BigInteger, nullable=False),
)
Index("ix_container_files_container", container_files.c.container_id, container_files.c.sort_key, container_files.c.id)
