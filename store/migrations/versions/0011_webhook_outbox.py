"""Webhook deliveries per endpoint: an outbox, and a queue an endpoint with its circuit
breaker, not a workflow an event.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "webhook_outbox",
        sa.Column("endpoint", sa.String(80), primary_key=True),
        sa.Column("event_id", sa.String(80), primary_key=True),
        sa.Column("event", sa.Text, nullable=False),
        sa.Column("policy", sa.Text, nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("give_up_at", sa.BigInteger, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    )
    op.create_index("ix_webhook_outbox_queue", "webhook_outbox", ["endpoint", "created_at", "event_id"])
    op.create_table(
        "webhook_queues",
        sa.Column("endpoint", sa.String(80), primary_key=True),
        sa.Column("failures", sa.Integer, nullable=False),
        sa.Column("next_attempt_at", sa.BigInteger, nullable=False),
        sa.Column("open_until", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("webhook_queues")
    op.drop_index("ix_webhook_outbox_queue", table_name="webhook_outbox")
    op.drop_table("webhook_outbox")
