"""Tool calls sent to their MCP server, so a call that is not repeatable is sent at most once.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tool_dispatches",
        sa.Column("response_id", sa.String(80), primary_key=True),
        sa.Column("call_id", sa.String(255), primary_key=True),
        sa.Column("sent_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("tool_dispatches")
