"""The store's hub: one object that opens every part of the store on one database, each
part a module of its own (`store/responses.py` for a response's own rows, `store/approvals.py`,
`store/conversations.py`, `store/event_log.py`, ...). A consumer that needs one part takes that
part, not the hub."""

from __future__ import annotations

from sealing.secret_box import SecretBox
from store.approvals import Approvals
from store.cancels import CancelRequests
from store.chunks import Chunks
from store.containers import Containers
from store.conversations import Conversations
from store.database import Database
from store.dispatches import ToolDispatches
from store.event_log import EventLog
from store.files import Files
from store.history_deletions import HistoryDeletions
from store.mcp_secrets import McpSecretsStore
from store.parked import ParkedFields
from store.prompts import Prompts
from store.responses import Responses
from store.safety_strikes import SafetyStrikes
from store.starts import Starts
from store.steers import Steers
from store.turns import Turns
from store.vector_stores import VectorStores
from store.webhooks import WebhookEndpoints, WebhookOutbox
from store.workers import WorkerRegistry


class ResponseRepository:
    def __init__(
        self,
        db: Database,
        *,
        stream_poll_seconds: float = 0.02,
        cancel_poll_seconds: float = 0.25,
        secret_box: SecretBox | None = None,
    ) -> None:
        self.db = db
        self.secret_box = secret_box
        self.events = EventLog(db, stream_poll_seconds)
        self.turns = Turns(db)
        self.conversations = Conversations(db)
        self.files = Files(db)
        self.containers = Containers(db)
        self.vector_stores = VectorStores(db)
        self.chunks = Chunks(db)
        self.starts = Starts(db)
        self.parked = ParkedFields(db)
        self.cancels = CancelRequests(db, cancel_poll_seconds)
        """Clients' cancels of running responses, and the feed running calls wait on."""
        self.workers = WorkerRegistry(db)
        """Which workers are running, by their own account."""
        self.approvals = Approvals(db)
        """Approval requests: decisions, waits, open requests, the pending list."""
        self.webhook_endpoints = WebhookEndpoints(db, secret_box)
        self.webhook_outbox = WebhookOutbox(db)
        self.history_deletions = HistoryDeletions(db)
        """Temporal histories to erase (`response_service/history_eraser.py`)."""
        self.mcp_secrets = McpSecretsStore(db, secret_box)
        """MCP `headers` and `authorization`, sealed for the response's project."""
        self.dispatches = ToolDispatches(db)
        """Which tool calls were sent, so one that is not repeatable is sent at most once."""
        self.prompts = Prompts(db)
        """Prompts kept on the server, in versions (the Prompts API)."""
        self.steers = Steers(db)
        """Input queued for running responses (WebSocket mode's steering)."""
        self.strikes = SafetyStrikes(db)
        """Responses a moderation check blocked, counted by safety identifier."""
        self.responses = Responses(db, self.events, self.mcp_secrets)
        """A response's own rows: created, read, ended, listed and removed."""

    async def ping(self) -> None:
        async with self.db.read() as transaction:
            await transaction.value("SELECT 1 FROM responses LIMIT 1")
