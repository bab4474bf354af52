"""Responses whose workflow a sweep found started: only the others are orphan candidates;
and an index of the unstored responses, the only ones the retention sweep reads.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

UNCONFIRMED = "NOT start_confirmed AND status IN ('queued', 'in_progress')"


def upgrade() -> None:
    with op.batch_alter_table("responses") as batch:
        batch.add_column(sa.Column("start_confirmed", sa.Boolean, nullable=False, server_default=sa.text("FALSE")))
    op.create_index(
        "ix_responses_unconfirmed",
        "responses",
        ["sort_key"],
        sqlite_where=sa.text(UNCONFIRMED),
        postgresql_where=sa.text(UNCONFIRMED),
    )
    op.create_index(
        "ix_responses_unstored",
        "responses",
        ["sort_key"],
        sqlite_where=sa.text("NOT stored"),
        postgresql_where=sa.text("NOT stored"),
    )


def downgrade() -> None:
    op.drop_index("ix_responses_unstored", table_name="responses")
    op.drop_index("ix_responses_unconfirmed", table_name="responses")
    with op.batch_alter_table("responses") as batch:
        batch.drop_column("start_confirmed")
