"""Approval requests that ended responses leave open (a non-background response's, or a
background wait that timed out), so the approvals inbox can show them and keep a decision for
the follow-up that continues the response; and the reason a decision gave, which that
follow-up tells the model.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "open_approvals",
        sa.Column("approval_request_id", sa.String(80), primary_key=True),
        sa.Column("response_id", sa.String(80), nullable=False),
        sa.Column("asked_at", sa.BigInteger, nullable=False),
        sa.Column("closed_by", sa.String(80), nullable=True),
    )
    op.create_index("ix_open_approvals_response_id", "open_approvals", ["response_id"])
    op.create_index("ix_open_approvals_closed_by", "open_approvals", ["closed_by"])
    with op.batch_alter_table("approval_decisions") as table:
        table.add_column(sa.Column("reason", sa.Text, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("approval_decisions") as table:
        table.drop_column("reason")
    op.drop_index("ix_open_approvals_closed_by", table_name="open_approvals")
    op.drop_index("ix_open_approvals_response_id", table_name="open_approvals")
    op.drop_table("open_approvals")
