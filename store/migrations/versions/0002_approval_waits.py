"""Approval requests that responses wait for, with when they were asked: the approvals-waiting
gauge and the time-to-decision histogram (`telemetry/metrics.py`) come from here.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "approval_waits",
        sa.Column("approval_request_id", sa.String(80), primary_key=True),
        sa.Column("response_id", sa.String(80), nullable=False),
        sa.Column("asked_at", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_approval_waits_response_id", "approval_waits", ["response_id"])


def downgrade() -> None:
    op.drop_index("ix_approval_waits_response_id", table_name="approval_waits")
    op.drop_table("approval_waits")
