"""Safety strikes: responses a moderation check blocked, by project and `safety_identifier`.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "safety_strikes",
        sa.Column("response_id", sa.String(80), primary_key=True),
        sa.Column("project", sa.String(80), nullable=False),
        sa.Column("safety_identifier", sa.String(256), nullable=False),
        sa.Column("struck_at", sa.Float, nullable=False),
    )
    op.create_index("ix_safety_strikes_identifier", "safety_strikes", ["project", "safety_identifier", "struck_at"])


def downgrade() -> None:
    op.drop_index("ix_safety_strikes_identifier", table_name="safety_strikes")
    op.drop_table("safety_strikes")
