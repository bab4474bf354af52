"""Steers (WebSocket mode's `response.steer`), and responses found by the one they follow.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "steers",
        sa.Column("id", sa.String(80), primary_key=True),
        sa.Column("response_id", sa.String(80), nullable=False),
        sa.Column("project", sa.String(80), nullable=False),
        sa.Column("sort_key", sa.BigInteger, nullable=False),
        sa.Column("items", sa.JSON, nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("successor_id", sa.String(80), nullable=True),
        sa.Column("required_input", sa.JSON, nullable=True),
        sa.Column("error_code", sa.String(40), nullable=True),
    )
    op.create_index("ix_steers_response", "steers", ["response_id", "sort_key"])
    op.create_index("ix_responses_previous", "responses", ["previous_response_id"])


def downgrade() -> None:
    op.drop_index("ix_responses_previous", table_name="responses")
    op.drop_index("ix_steers_response", table_name="steers")
    op.drop_table("steers")
