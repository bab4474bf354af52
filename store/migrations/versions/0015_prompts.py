"""Prompts (the Prompts API): a row a version of a project's prompt.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "prompts",
        sa.Column("id", sa.String(80), primary_key=True),
        sa.Column("version", sa.Integer, primary_key=True),
        sa.Column("project", sa.String(80), nullable=False),
        sa.Column("prompt", sa.Text, nullable=False),
        sa.Column("variables", sa.JSON, nullable=False),
        sa.Column("is_default", sa.Boolean, nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("sort_key", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_prompts_project", "prompts", ["project", "sort_key"])


def downgrade() -> None:
    op.drop_index("ix_prompts_project", table_name="prompts")
    op.drop_table("prompts")
