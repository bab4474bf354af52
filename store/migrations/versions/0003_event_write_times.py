"""When each event was appended: the stream-lag metric (`telemetry/metrics.py`) is the time from
an event's write to a stream passing it on. Events from before have none.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("events") as table:
        table.add_column(sa.Column("written_at", sa.BigInteger, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("events") as table:
        table.drop_column("written_at")
