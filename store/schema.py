"""Table definitions (those of files, vector stores and containers in `store/schema_files.py`).
Portable SQL only: the same schema runs on SQLite and PostgreSQL.

A change here needs a migration in `store/migrations/versions` that makes it
(`tests/stack/test_migrations.py` fails while the two disagree)."""

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Float,
    Index,
    Integer,
    String,
    Table,
    Text,
    text,
)

from store import schema_files  # noqa: F401  (its tables, files, vector stores and containers, join `metadata`)
from store.metadata import NO_PROJECT as NO_PROJECT
from store.metadata import metadata as metadata

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
    # The project (tenant) of the API key that created it; every route sees only its own.
    Column("project", String(80), nullable=False, server_default=text("''")),
    # The conversation it ran on, if any: deleting the conversation erases its histories.
    Column("conversation_id", String(80), nullable=True),
    # Whether a sweep found its workflow started (`worker/orphans.py`): such a response is
    # never a candidate again, so a sweep costs what it finds, not what waits.
    Column("start_confirmed", Boolean, nullable=False, server_default=text("FALSE")),
)
Index("ix_responses_conversation_id", responses.c.conversation_id)
# Successors are found by the response they follow (`GET /v1/responses?previous_response_id=`).
Index("ix_responses_previous", responses.c.previous_response_id)
Index(
    "ix_responses_unstored", responses.c.sort_key, sqlite_where=text("NOT stored"), postgresql_where=text("NOT stored")
)
Index(
    "ix_responses_unconfirmed",
    responses.c.sort_key,
    sqlite_where=text("NOT start_confirmed AND status IN ('queued', 'in_progress')"),
    postgresql_where=text("NOT start_confirmed AND status IN ('queued', 'in_progress')"),
)
Index("ix_responses_sort_key", responses.c.sort_key, responses.c.id)
Index("ix_responses_project_sort_key", responses.c.project, responses.c.sort_key, responses.c.id)

input_items = Table(
    "input_items",
    metadata,
    Column("response_id", String(80), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("item_id", String(255), nullable=False),
    Column("data", JSON, nullable=False),
)
Index("ix_input_items_item_id", input_items.c.item_id)

# The chat-completion messages of a response's last inference call (plus its reply): a
# follow-up response in a chain resumes from them without re-converting items. Each row keeps
# the response's own messages after the first `base_length` of its base's context
# (`store/chat_contexts.py`); a row with no base holds the whole context.
chat_contexts = Table(
    "chat_contexts",
    metadata,
    Column("response_id", String(80), primary_key=True),
    Column("messages", JSON, nullable=False),
    Column("base_response_id", String(80), nullable=True),
    Column("base_length", Integer, nullable=True),
)
Index("ix_chat_contexts_base_response_id", chat_contexts.c.base_response_id)

# What each inference call of a response returned (its output items, finish reason and usage),
# kept with the chat context it produced: a local activity that runs again for the same turn
# (its workflow task timed out or its worker died after the call) returns this instead of
# asking the model again.
inference_results = Table(
    "inference_results",
    metadata,
    Column("response_id", String(80), primary_key=True),
    Column("turn", Integer, primary_key=True, autoincrement=False),
    Column("result", JSON, nullable=False),
)

# Who is making a response's inference call for a turn now: an execution that starts the turn
# claims it for a lease it keeps renewing. Another execution of the same turn (a workflow task
# that timed out ran again on another worker) waits for the holder's result instead of asking
# the model again, and takes the turn over only once the lease has run out. The holder's
# event-log appends and its result are written only while the claim is still its own.
inference_claims = Table(
    "inference_claims",
    metadata,
    Column("response_id", String(80), primary_key=True),
    Column("turn", Integer, primary_key=True, autoincrement=False),
    Column("holder", String(80), nullable=False),
    # Microseconds since the epoch; 0 once released.
    Column("expires_at", BigInteger, nullable=False),
    # Attempts of this turn's call that failed, whichever execution made them: the retry
    # budget is the turn's, so a turn that runs again does not start it over.
    Column("failures", Integer, nullable=False, default=0),
    # The last failure: {"type", "message", "non_retryable"}.
    Column("last_error", JSON, nullable=True),
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
    # When the event was appended (ms since the epoch, by the writer's clock): how long a
    # stream takes to pass an event on (the stream-lag metric). Null for events from before.
    Column("written_at", BigInteger, nullable=True),
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

# Prompts (the Prompts API, `store/prompts.py`): a row a version of a project's prompt; one
# version of each is its default.
prompts = Table(
    "prompts",
    metadata,
    Column("id", String(80), primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("project", String(80), nullable=False),
    Column("prompt", Text, nullable=False),
    Column("variables", JSON, nullable=False),
    Column("is_default", Boolean, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("sort_key", BigInteger, nullable=False),
)
Index("ix_prompts_project", prompts.c.project, prompts.c.sort_key)

# Safety strikes (`store/safety_strikes.py`): responses a moderation check blocked, counted
# against their project's `safety_identifier`.
safety_strikes = Table(
    "safety_strikes",
    metadata,
    Column("response_id", String(80), primary_key=True),
    Column("project", String(80), nullable=False),
    Column("safety_identifier", String(256), nullable=False),
    Column("struck_at", Float, nullable=False),
)
Index(
    "ix_safety_strikes_identifier",
    safety_strikes.c.project,
    safety_strikes.c.safety_identifier,
    safety_strikes.c.struck_at,
)

# Steers (WebSocket mode's `response.steer`): user input queued for a running response, kept
# before its workflow takes it, until a successor starts from it (`models/steering.py`).
steers = Table(
    "steers",
    metadata,
    Column("id", String(80), primary_key=True),
    Column("response_id", String(80), nullable=False),
    Column("project", String(80), nullable=False),
    # Arrival in microseconds: a successor's input has its steers in the order they came.
    Column("sort_key", BigInteger, nullable=False),
    # Its input items as listed ([item id, item]).
    Column("items", JSON, nullable=False),
    Column("status", String(20), nullable=False),
    Column("successor_id", String(80), nullable=True),
    Column("required_input", JSON, nullable=True),
    Column("error_code", String(40), nullable=True),
)
Index("ix_steers_response", steers.c.response_id, steers.c.sort_key)

# Secrets (MCP `headers`, `authorization`) a request carried, sealed (`sealing/secret_box.py`):
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
    # The id of the API key that decided (NULL while the server ran open).
    Column("decided_by", String(80), nullable=True),
    # Why, as the decider said (JSON text): kept for a decision a later follow-up applies (`open_approvals`).
    Column("reason", Text, nullable=True),
)

# Approval requests a background response waits for now, with when it began to wait (microseconds
# since the epoch): the approvals-waiting gauge and the time to a decision. A decision, or the
# response's end, removes its row.
approval_waits = Table(
    "approval_waits",
    metadata,
    Column("approval_request_id", String(80), primary_key=True),
    Column("response_id", String(80), nullable=False),
    Column("asked_at", BigInteger, nullable=False),
)
Index("ix_approval_waits_response_id", approval_waits.c.response_id)

# Approval requests an ended stored response left open (a non-background response's, or a
# background wait that timed out), since when they were asked (microseconds): the approvals
# inbox lists them, and a decision made there (in `approval_decisions`) is applied by the
# follow-up that continues the response. `closed_by` is the follow-up that answered or closed
# the request; removing that follow-up opens it again.
open_approvals = Table(
    "open_approvals",
    metadata,
    Column("approval_request_id", String(80), primary_key=True),
    Column("response_id", String(80), nullable=False),
    Column("asked_at", BigInteger, nullable=False),
    Column("closed_by", String(80), nullable=True),
)
Index("ix_open_approvals_response_id", open_approvals.c.response_id)
Index("ix_open_approvals_closed_by", open_approvals.c.closed_by)

# Conversations (OpenAI's Conversations API): a durable list of items that responses read as
# their context and add their input and output to. `active_response_id` is the lock a running
# response holds, so two responses never interleave on one conversation.
conversations = Table(
    "conversations",
    metadata,
    Column("id", String(80), primary_key=True),
    Column("created_at", BigInteger, nullable=False),
    Column("metadata", JSON, nullable=False),
    Column("active_response_id", String(80), nullable=True),
    Column("project", String(80), nullable=False, server_default=text("''")),
)

conversation_items = Table(
    "conversation_items",
    metadata,
    Column("conversation_id", String(80), primary_key=True),
    Column("position", Integer, primary_key=True, autoincrement=False),
    Column("item_id", String(255), nullable=False),
    Column("data", JSON, nullable=False),
)
Index("ix_conversation_items_item_id", conversation_items.c.item_id)

# The output items of stored responses, by id: what `item_reference` input items resolve
# against (with input items and conversation items).
output_items = Table(
    "output_items",
    metadata,
    Column("response_id", String(80), primary_key=True),
    Column("position", Integer, primary_key=True, autoincrement=False),
    Column("item_id", String(255), nullable=False),
    Column("data", JSON, nullable=False),
)
Index("ix_output_items_item_id", output_items.c.item_id)

# The heavy fields of items too large to travel through Temporal's history
# (`models/history_budget.py`): the workflow carries the item emptied of them, and they are put
# back where the item is needed whole (the final response, a tool call, the next inference).
parked_fields = Table(
    "parked_fields",
    metadata,
    Column("response_id", String(80), primary_key=True),
    Column("item_id", String(255), primary_key=True),
    Column("field", String(40), primary_key=True),
    Column("value", JSON, nullable=False),
)

# Tool calls that were sent to their MCP server: a call that is not repeatable is sent at most
# once, and an attempt that finds its row here knows an earlier one may have run it
# (`store/dispatches.py`).
tool_dispatches = Table(
    "tool_dispatches",
    metadata,
    Column("response_id", String(80), primary_key=True),
    Column("call_id", String(255), primary_key=True),
    Column("sent_at", Float, nullable=False),
)

# Temporal histories to erase: a response deleted, unstored, expired, or of a deleted
# conversation leaves its workflow id here in the transaction that removes its rows; the
# history is deleted once its workflow has ended (`response_service/history_eraser.py`).
history_deletions = Table(
    "history_deletions",
    metadata,
    Column("workflow_id", String(80), primary_key=True),
    Column("requested_at", Float, nullable=False),
)

# API keys (`durable-responses keys`): each belongs to a project; only a SHA-256 of the key
# is kept (keys are long and random, so a fast hash cannot be reversed by guessing). An
# approver key may read its project's waiting responses and decide approvals, nothing else.
api_keys = Table(
    "api_keys",
    metadata,
    Column("id", String(80), primary_key=True),
    Column("project", String(80), nullable=False),
    Column("key_hash", String(64), nullable=False, unique=True),
    # The first characters of the key, to tell keys apart in `keys list`.
    Column("prefix", String(16), nullable=False),
    Column("approver", Boolean, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("revoked_at", BigInteger, nullable=True),
)


# Workers that are running, each writing its `last_seen` every few seconds and deleting its
# row when it stops: readiness ("a worker polls the task queue") is known within seconds.
workers = Table(
    "workers",
    metadata,
    Column("id", String(80), primary_key=True),
    Column("task_queue", String(255), nullable=False),
    Column("last_seen", BigInteger, nullable=False),
)


# A project's webhook endpoints (OpenAI's `/v1/webhook_endpoints`): where its background
# responses' events go, besides the operator's WEBHOOK_URLS. The URL (which can hold a token)
# and the signing secret are sealed with SECRETS_KEY; `previous_secret_sealed` still signs
# until `previous_secret_until` (seconds) after a rotation that keeps the old secret a while.
webhook_endpoints = Table(
    "webhook_endpoints",
    metadata,
    Column("id", String(80), primary_key=True),
    Column("project", String(80), nullable=False),
    Column("name", String(256), nullable=False),
    Column("url_sealed", Text, nullable=False),
    Column("event_types", JSON, nullable=False),
    Column("secret_sealed", Text, nullable=False),
    Column("secret_hint", String(40), nullable=False),
    Column("previous_secret_sealed", Text, nullable=True),
    Column("previous_secret_until", BigInteger, nullable=True),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    # Creation time in microseconds: orders the list.
    Column("sort_key", BigInteger, nullable=False),
)
Index(
    "ix_webhook_endpoints_project_sort_key",
    webhook_endpoints.c.project,
    webhook_endpoints.c.sort_key,
    webhook_endpoints.c.id,
)


# Each upstream deployment's budget, shared by every worker (`upstream/budgets.py`, the rules in
# `upstream/pacing.py`): the virtual schedule of its calls and tokens, the rate learned from
# its 429s, and how long its provider asked to be left alone. Times in epoch seconds.
upstream_budgets = Table(
    "upstream_budgets",
    metadata,
    Column("deployment", String(200), primary_key=True),
    Column("next_free", Float, nullable=False),
    Column("next_free_tokens", Float, nullable=False),
    Column("learned_rate", Float, nullable=True),
    Column("decreased_at", Float, nullable=False),
    Column("blocked_until", Float, nullable=False),
)

# Each project's turn in a deployment's lane: when its next deferred call comes back (fair
# queuing between projects; `upstream/pacing.py`).
upstream_queues = Table(
    "upstream_queues",
    metadata,
    Column("deployment", String(200), primary_key=True),
    Column("lane", String(20), primary_key=True),
    Column("project", String(80), primary_key=True),
    Column("next_at", Float, nullable=False),
)

# Who runs each cluster-wide chore (`worker/housekeeping.py`), and until when: the holder
# renews it each round; when it stops renewing, another worker takes it over.
chore_leases = Table(
    "chore_leases",
    metadata,
    Column("name", String(80), primary_key=True),
    Column("holder", String(80), nullable=False),
    Column("until", Float, nullable=False),
)

# Webhook events waiting to be delivered, one row an event and endpoint, each endpoint's in the
# order they were put (`worker/webhooks.py`): a receiver that is down leaves its backlog
# here, in one place, not in open workflows.
webhook_outbox = Table(
    "webhook_outbox",
    metadata,
    Column("endpoint", String(80), primary_key=True),
    Column("event_id", String(80), primary_key=True),
    Column("event", Text, nullable=False),
    Column("policy", Text, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("give_up_at", BigInteger, nullable=False),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Index("ix_webhook_outbox_queue", "endpoint", "created_at", "event_id"),
)

# Each endpoint with events waiting: when it is tried next (after a failure: backoff), its
# failures in a row, and until when its circuit is open (ms). The dispatcher reads this small
# table each round, never the backlog itself.
webhook_queues = Table(
    "webhook_queues",
    metadata,
    Column("endpoint", String(80), primary_key=True),
    Column("failures", Integer, nullable=False),
    Column("next_attempt_at", BigInteger, nullable=False),
    Column("open_until", BigInteger, nullable=False),
)
