"""Leases on the cluster-wide chores: one worker sweeps, not every one.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "chore_leases",
        sa.Column("name", sa.String(80), primary_key=True),
        sa.Column("holder", sa.String(80), nullable=False),
        sa.Column("until", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("chore_leases")
