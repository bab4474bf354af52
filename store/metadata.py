"""The schema's one `MetaData`, which every table module adds to (`store/schema.py`,
`store/schema_files.py`), and what their tables share."""

from sqlalchemy import LargeBinary, MetaData
from sqlalchemy.dialects.postgresql import ARRAY, REAL

EMBEDDING = LargeBinary().with_variant(ARRAY(REAL), "postgresql")
"""A chunk's embedding: float32 bytes on SQLite, `real[]` on PostgreSQL."""

metadata = MetaData()

NO_PROJECT = ""
"""The project of what was made while the server ran open (no API keys)."""
