"""A project's webhook endpoints (`/v1/webhook_endpoints`), their URLs and signing secrets
sealed with SECRETS_KEY.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "webhook_endpoints",
        sa.Column("id", sa.String(80), primary_key=True),
        sa.Column("project", sa.String(80), nullable=False),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("url_sealed", sa.Text, nullable=False),
        sa.Column("event_types", sa.JSON, nullable=False),
        sa.Column("secret_sealed", sa.Text, nullable=False),
        sa.Column("secret_hint", sa.String(40), nullable=False),
        sa.Column("previous_secret_sealed", sa.Text, nullable=True),
        sa.Column("previous_secret_until", sa.BigInteger, nullable=True),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.Column("sort_key", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_webhook_endpoints_project_sort_key", "webhook_endpoints", ["project", "sort_key", "id"])


def downgrade() -> None:
    op.drop_index("ix_webhook_endpoints_project_sort_key", table_name="webhook_endpoints")
    op.drop_table("webhook_endpoints")
