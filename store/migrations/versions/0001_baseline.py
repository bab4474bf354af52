"""The schema as it stood when migrations began; adopts stores made before them.

A store that earlier versions made (without Alembic) holds some of these tables, and some of
their columns: every table missing is created, and every column or index missing from a table
that is there is added (each such column is nullable or has a server default, so existing
rows stay valid). On an empty database this simply creates the schema.

The tables are written out here, not imported from `store/schema.py`: a migration is a record
of a change and must not move when the models do.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

baseline = sa.MetaData()
NO_PROJECT = sa.text("''")

sa.Table(
    "responses",
    baseline,
    sa.Column("id", sa.String(80), primary_key=True),
    sa.Column("created_at", sa.BigInteger, nullable=False),
    sa.Column("sort_key", sa.BigInteger, nullable=False),
    sa.Column("status", sa.String(20), nullable=False),
    sa.Column("stored", sa.Boolean, nullable=False),
    sa.Column("previous_response_id", sa.String(80), nullable=True),
    sa.Column("data", sa.JSON, nullable=False),
    sa.Column("project", sa.String(80), nullable=False, server_default=NO_PROJECT),
    sa.Index("ix_responses_sort_key", "sort_key", "id"),
    sa.Index("ix_responses_project_sort_key", "project", "sort_key", "id"),
)
sa.Table(
    "input_items",
    baseline,
    sa.Column("response_id", sa.String(80), primary_key=True),
    sa.Column("position", sa.Integer, primary_key=True),
    sa.Column("item_id", sa.String(255), nullable=False),
    sa.Column("data", sa.JSON, nullable=False),
    sa.Index("ix_input_items_item_id", "item_id"),
)
sa.Table(
    "chat_contexts",
    baseline,
    sa.Column("response_id", sa.String(80), primary_key=True),
    sa.Column("messages", sa.JSON, nullable=False),
)
sa.Table(
    "inference_results",
    baseline,
    sa.Column("response_id", sa.String(80), primary_key=True),
    sa.Column("turn", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("result", sa.JSON, nullable=False),
)
sa.Table(
    "inference_claims",
    baseline,
    sa.Column("response_id", sa.String(80), primary_key=True),
    sa.Column("turn", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("holder", sa.String(80), nullable=False),
    sa.Column("expires_at", sa.BigInteger, nullable=False),
    sa.Column("failures", sa.Integer, nullable=False),
    sa.Column("last_error", sa.JSON, nullable=True),
)
sa.Table(
    "events",
    baseline,
    sa.Column("response_id", sa.String(80), primary_key=True),
    sa.Column("sequence_number", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("type", sa.String(64), nullable=False),
    sa.Column("output_index", sa.Integer, nullable=True),
    sa.Column("data", sa.JSON, nullable=False),
)
sa.Table(
    "cancel_requests",
    baseline,
    sa.Column("response_id", sa.String(80), primary_key=True),
    sa.Column("requested_at", sa.BigInteger, nullable=False),
)
sa.Table(
    "mcp_secrets",
    baseline,
    sa.Column("response_id", sa.String(80), primary_key=True),
    sa.Column("server_label", sa.String(64), primary_key=True),
    sa.Column("sealed", sa.Text, nullable=False),
)
sa.Table(
    "mcp_listings",
    baseline,
    sa.Column("response_id", sa.String(80), primary_key=True),
    sa.Column("listings", sa.JSON, nullable=False),
)
sa.Table(
    "approval_decisions",
    baseline,
    sa.Column("approval_request_id", sa.String(80), primary_key=True),
    sa.Column("response_id", sa.String(80), nullable=False),
    sa.Column("approve", sa.Boolean, nullable=False),
    sa.Column("decided_by", sa.String(80), nullable=True),
)
sa.Table(
    "conversations",
    baseline,
    sa.Column("id", sa.String(80), primary_key=True),
    sa.Column("created_at", sa.BigInteger, nullable=False),
    sa.Column("metadata", sa.JSON, nullable=False),
    sa.Column("active_response_id", sa.String(80), nullable=True),
    sa.Column("project", sa.String(80), nullable=False, server_default=NO_PROJECT),
)
sa.Table(
    "conversation_items",
    baseline,
    sa.Column("conversation_id", sa.String(80), primary_key=True),
    sa.Column("position", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("item_id", sa.String(255), nullable=False),
    sa.Column("data", sa.JSON, nullable=False),
    sa.Index("ix_conversation_items_item_id", "item_id"),
)
sa.Table(
    "output_items",
    baseline,
    sa.Column("response_id", sa.String(80), primary_key=True),
    sa.Column("position", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("item_id", sa.String(255), nullable=False),
    sa.Column("data", sa.JSON, nullable=False),
    sa.Index("ix_output_items_item_id", "item_id"),
)
sa.Table(
    "parked_fields",
    baseline,
    sa.Column("response_id", sa.String(80), primary_key=True),
    sa.Column("item_id", sa.String(255), primary_key=True),
    sa.Column("field", sa.String(40), primary_key=True),
    sa.Column("value", sa.JSON, nullable=False),
)
sa.Table(
    "api_keys",
    baseline,
    sa.Column("id", sa.String(80), primary_key=True),
    sa.Column("project", sa.String(80), nullable=False),
    sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("prefix", sa.String(16), nullable=False),
    sa.Column("approver", sa.Boolean, nullable=False),
    sa.Column("created_at", sa.BigInteger, nullable=False),
    sa.Column("revoked_at", sa.BigInteger, nullable=True),
)
sa.Table(
    "workers",
    baseline,
    sa.Column("id", sa.String(80), primary_key=True),
    sa.Column("task_queue", sa.String(255), nullable=False),
    sa.Column("last_seen", sa.BigInteger, nullable=False),
)


def upgrade() -> None:
    connection = op.get_bind()
    inspector = sa.inspect(connection)
    present = set(inspector.get_table_names())
    for table in baseline.sorted_tables:
        if table.name not in present:
            table.create(connection)
            continue
        columns = {column["name"] for column in inspector.get_columns(table.name)}
        for column in table.columns:
            if column.name not in columns:
                op.add_column(
                    table.name,
                    sa.Column(column.name, column.type, nullable=column.nullable, server_default=column.server_default),
                )
        indexes = {index["name"] for index in inspector.get_indexes(table.name)}
        for index in table.indexes:
            if index.name not in indexes:
                index.create(connection)


def downgrade() -> None:
    for table in reversed(baseline.sorted_tables):
        op.drop_table(table.name)
