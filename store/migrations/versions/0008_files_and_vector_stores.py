"""Files, vector stores, the files in them with their ingestion's state, and their chunks.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY, REAL

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "files",
        sa.Column("id", sa.String(80), primary_key=True),
        sa.Column("project", sa.String(80), nullable=False),
        sa.Column("filename", sa.String(512), nullable=False),
        sa.Column("purpose", sa.String(40), nullable=False),
        sa.Column("bytes", sa.BigInteger, nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("expires_at", sa.BigInteger, nullable=True),
        sa.Column("sort_key", sa.BigInteger, nullable=False),
        sa.Column("content", sa.LargeBinary, nullable=False),
    )
    op.create_index("ix_files_project_sort_key", "files", ["project", "sort_key", "id"])
    op.create_table(
        "vector_stores",
        sa.Column("id", sa.String(80), primary_key=True),
        sa.Column("project", sa.String(80), nullable=False),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("metadata", sa.JSON, nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("last_active_at", sa.BigInteger, nullable=False),
        sa.Column("expires_after_days", sa.Integer, nullable=True),
        sa.Column("sort_key", sa.BigInteger, nullable=False),
        sa.Column("embedding_model", sa.String(200), nullable=False),
    )
    op.create_index("ix_vector_stores_project_sort_key", "vector_stores", ["project", "sort_key", "id"])
    op.create_table(
        "vector_store_files",
        sa.Column("vector_store_id", sa.String(80), primary_key=True),
        sa.Column("file_id", sa.String(80), primary_key=True),
        sa.Column("batch_id", sa.String(80), nullable=True),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("last_error", sa.JSON, nullable=True),
        sa.Column("attributes", sa.JSON, nullable=False),
        sa.Column("chunking_strategy", sa.JSON, nullable=False),
        sa.Column("usage_bytes", sa.BigInteger, nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("sort_key", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_vector_store_files_batch_id", "vector_store_files", ["batch_id"])
    op.create_index("ix_vector_store_files_sort_key", "vector_store_files", ["vector_store_id", "sort_key", "file_id"])
    op.create_table(
        "vector_store_file_batches",
        sa.Column("id", sa.String(80), primary_key=True),
        sa.Column("vector_store_id", sa.String(80), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("cancelled", sa.Boolean, nullable=False),
    )
    op.create_table(
        "vector_store_chunks",
        sa.Column("vector_store_id", sa.String(80), primary_key=True),
        sa.Column("file_id", sa.String(80), primary_key=True),
        sa.Column("position", sa.Integer, primary_key=True),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("tokens", sa.Integer, nullable=False),
        sa.Column("embedding", sa.LargeBinary().with_variant(ARRAY(REAL), "postgresql"), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("vector_store_chunks")
    op.drop_table("vector_store_file_batches")
    op.drop_index("ix_vector_store_files_sort_key", table_name="vector_store_files")
    op.drop_index("ix_vector_store_files_batch_id", table_name="vector_store_files")
    op.drop_table("vector_store_files")
    op.drop_index("ix_vector_stores_project_sort_key", table_name="vector_stores")
    op.drop_table("vector_stores")
    op.drop_index("ix_files_project_sort_key", table_name="files")
    op.drop_table("files")
