"""Upstream budgets shared by every worker, and each project's turn in a deployment's lane.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "upstream_budgets",
        sa.Column("deployment", sa.String(200), primary_key=True),
        sa.Column("next_free", sa.Float, nullable=False),
        sa.Column("next_free_tokens", sa.Float, nullable=False),
        sa.Column("learned_rate", sa.Float, nullable=True),
        sa.Column("decreased_at", sa.Float, nullable=False),
        sa.Column("blocked_until", sa.Float, nullable=False),
    )
    op.create_table(
        "upstream_queues",
        sa.Column("deployment", sa.String(200), primary_key=True),
        sa.Column("lane", sa.String(20), primary_key=True),
        sa.Column("project", sa.String(80), primary_key=True),
        sa.Column("next_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("upstream_queues")
    op.drop_table("upstream_budgets")
