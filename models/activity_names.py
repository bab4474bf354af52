"""The activities' names: how workflows call them and how the activities register (both import
these, so the two cannot drift apart). Histories record the names, so a name never changes
while a workflow that called it may replay; a new one gets a new constant."""

from __future__ import annotations

# A response's own steps, in the worker that runs its workflow (local activities).
RUN_INFERENCE = "run_inference"
RECORD_STATUS = "record_status"
EMIT_EVENTS = "emit_events"
FINALIZE_RESPONSE = "finalize_response"
RECORD_APPROVAL_WAIT = "record_approval_wait"
LIST_MCP_TOOLS = "list_mcp_tools"
ENQUEUE_WEBHOOKS = "enqueue_webhooks"
START_SUCCESSOR = "start_successor"
MODERATE_INPUT = "moderate_input"

# Steps any worker may take (regular activities: retried, heartbeated, moved when a worker dies).
CALL_MCP_TOOL = "call_mcp_tool"
WEB_SEARCH = "web_search"
FILE_SEARCH = "file_search"
DELIVER_WEBHOOK = "deliver_webhook"

# Code in a container (`activities/code_execution.py`): placed on a host by any worker that runs
# code, then run on that host's own queue.
PLACE_CONTAINER = "place_container"
RUN_CODE = "run_code"
RUN_SHELL = "run_shell"
CONTAINER_LOST = "container_lost"

# A file's ingestion into a vector store.
CHUNK_FILE = "chunk_file"
EMBED_CHUNKS = "embed_chunks"
"""A fixed range of chunks (ingestions started before they resumed where they stopped)."""
EMBED_NEXT_CHUNKS = "embed_next_chunks"
SETTLE_FILE = "settle_file"
