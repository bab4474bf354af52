"""Table definitions. Portable SQL only: the same schema runs on SQLite and PostgreSQL."""

from sqlalchemy import JSON, BigInteger, Boolean, Column, Index, Integer, MetaData, String, Table, Text

metadata = MetaData()

responses = Table(
    "responses",
    metadata,
    Column("id", String(80), primary_key=True),
    Column("created_at", BigInteger, nullable=False),
    # Creation time in microseconds: orders listings within the same second.
    Column("sort_key", BigInteger, nullable=False),
    Column("status", String(20), nullable=False),
    Column("stored", Boolean, nullable=False),
    Column("previous_response_id", String(80), nullable=True),
    Column("data", JSON, nullable=False),
)
Index("ix_responses_sort_key", responses.c.sort_key, responses.c.id)

input_items = Table(
    "input_items",
    metadata,
    Column("response_id", String(80), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("item_id", String(80), nullable=False),
    Column("data", JSON, nullable=False),
)
Index("ix_input_items_item_id", input_items.c.item_id)

# The chat-completion messages of a response's last inference call (plus its reply): a
# follow-up response in a chain resumes from them without re-converting items.
chat_contexts = Table(
    "chat_contexts",
    metadata,
    Column("response_id", String(80), primary_key=True),
    Column("messages", JSON, nullable=False),
)

# The per-response event log that streaming tails; sequence numbers are assigned here.
events = Table(
    "events",
    metadata,
    Column("response_id", String(80), primary_key=True),
    Column("sequence_number", Integer, primary_key=True, autoincrement=False),
    Column("type", String(64), nullable=False),
    # Set on item events: a retried inference call reads what its turn already streamed.
    Column("output_index", Integer, nullable=True),
    Column("data", JSON, nullable=False),
)

# Cancels asked for by clients. A running inference call watches this table (and an
# in-process notifier) so a cancel stops it at once, without waiting for Temporal to hand
# the workflow its cancel request.
cancel_requests = Table(
    "cancel_requests",
    metadata,
    Column("response_id", String(80), primary_key=True),
    Column("requested_at", BigInteger, nullable=False),
)

# Secrets (MCP `headers`, `authorization`) a request carried, sealed (store/secret_box.py):
# MCP activities open them by response id and server label. Never stored in clear.
mcp_secrets = Table(
    "mcp_secrets",
    metadata,
    Column("response_id", String(80), primary_key=True),
    Column("server_label", String(64), primary_key=True),
    Column("sealed", Text, nullable=False),
)

# The MCP tool listings a response saw (its own and its chain's): a follow-up response reuses
# them instead of listing the servers again.
mcp_listings = Table(
    "mcp_listings",
    metadata,
    Column("response_id", String(80), primary_key=True),
    Column("listings", JSON, nullable=False),
)

# Answers to approval requests, whichever way they came (an `mcp_approval_response` input
# item or `POST .../approvals`): an approval request is answered once.
approval_decisions = Table(
    "approval_decisions",
    metadata,
    Column("approval_request_id", String(80), primary_key=True),
    Column("response_id", String(80), nullable=False),
    Column("approve", Boolean, nullable=False),
)
