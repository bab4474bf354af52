"""A file's bytes in parts of their own (written and read a part at a time, never held whole),
and how many chunks a file made in a vector store once it is chunked (a restarted ingestion
resumes from there instead of reading the file again).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "file_parts",
        sa.Column("file_id", sa.String(80), primary_key=True),
        sa.Column("part", sa.Integer, primary_key=True),
        sa.Column("data", sa.LargeBinary, nullable=False),
        sa.Column("written_at", sa.BigInteger, nullable=False),
    )
    op.execute("INSERT INTO file_parts (file_id, part, data, written_at) SELECT id, 0, content, created_at FROM files")
    op.create_index("ix_file_parts_written_at", "file_parts", ["written_at"])
    with op.batch_alter_table("files") as batch:
        batch.drop_column("content")
    with op.batch_alter_table("vector_store_files") as batch:
        batch.add_column(sa.Column("chunk_count", sa.Integer, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("vector_store_files") as batch:
        batch.drop_column("chunk_count")
    with op.batch_alter_table("files") as batch:
        batch.add_column(sa.Column("content", sa.LargeBinary, nullable=False, server_default=sa.text("''")))
    op.drop_index("ix_file_parts_written_at", table_name="file_parts")
    op.drop_table("file_parts")
