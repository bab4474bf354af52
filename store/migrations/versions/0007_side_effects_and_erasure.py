"""Tool calls sent to their MCP server (a call that is not repeatable is sent at most once),
Temporal histories waiting to be erased, the conversation each response ran on, and chat
contexts kept as each response's own messages after its base's.

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
    op.create_table(
        "history_deletions",
        sa.Column("workflow_id", sa.String(80), primary_key=True),
        sa.Column("requested_at", sa.Float, nullable=False),
    )
    with op.batch_alter_table("responses") as batch:
        batch.add_column(sa.Column("conversation_id", sa.String(80), nullable=True))
    op.create_index("ix_responses_conversation_id", "responses", ["conversation_id"])
    with op.batch_alter_table("chat_contexts") as batch:
        batch.add_column(sa.Column("base_response_id", sa.String(80), nullable=True))
        batch.add_column(sa.Column("base_length", sa.Integer, nullable=True))
    op.create_index("ix_chat_contexts_base_response_id", "chat_contexts", ["base_response_id"])


def downgrade() -> None:
    op.drop_index("ix_chat_contexts_base_response_id", table_name="chat_contexts")
    with op.batch_alter_table("chat_contexts") as batch:
        batch.drop_column("base_length")
        batch.drop_column("base_response_id")
    op.drop_index("ix_responses_conversation_id", table_name="responses")
    with op.batch_alter_table("responses") as batch:
        batch.drop_column("conversation_id")
    op.drop_table("history_deletions")
    op.drop_table("tool_dispatches")
