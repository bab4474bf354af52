"""Containers (code_interpreter and the hosted shell run in them) and their files.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "containers",
        sa.Column("id", sa.String(80), primary_key=True),
        sa.Column("project", sa.String(80), nullable=False),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("memory_limit", sa.String(8), nullable=False),
        sa.Column("expires_after_minutes", sa.Integer, nullable=False),
        sa.Column("network_policy", sa.JSON, nullable=False),
        sa.Column("host", sa.String(80), nullable=True),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("last_active_at", sa.BigInteger, nullable=False),
        sa.Column("sort_key", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_containers_project_sort_key", "containers", ["project", "sort_key", "id"])
    op.create_index("ix_containers_host", "containers", ["host"])
    op.create_table(
        "container_files",
        sa.Column("id", sa.String(80), primary_key=True),
        sa.Column("container_id", sa.String(80), nullable=False),
        sa.Column("path", sa.String(1024), nullable=False),
        sa.Column("bytes", sa.BigInteger, nullable=False),
        sa.Column("source", sa.String(20), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("synced", sa.Boolean, nullable=False),
        sa.Column("sort_key", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_container_files_container", "container_files", ["container_id", "sort_key", "id"])


def downgrade() -> None:
    op.drop_index("ix_container_files_container", table_name="container_files")
    op.drop_table("container_files")
    op.drop_index("ix_containers_host", table_name="containers")
    op.drop_index("ix_containers_project_sort_key", table_name="containers")
    op.drop_table("containers")
