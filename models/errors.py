"""Typed domain errors. Every error this project raises on purpose descends from one root.

    DurableResponsesError                 root; never raised itself
    ├── ApiError                          maps to an HTTP answer in OpenAI's error shape
    │   ├── InvalidRequestError           400  the request is malformed or asks for what we do not do
    │   │   ├── ApprovalAlreadyAnsweredError   an MCP approval request may be answered once
    │   │   ├── ClientEventError          a WebSocket mode message refused, with its lane
    │   │   │                             (`websocket_mode/client_events.py`)
    │   │   ├── ContextLengthExceededError     the input does not fit the model's context window
    │   │   ├── ConversationLockedError   a response runs on the conversation already
    │   │   │                             (`store/conversations.py`)
    │   │   └── QuotaExceededError        the project keeps as many files, bytes, vector stores,
    │   │                                 files in a store or webhook endpoints as it may
    │   │                                 (`models/quotas.py`, beside the quotas)
    │   ├── AuthenticationError           401  no API key, or not one of this server's
    │   ├── PermissionDeniedError         403  an approver key asked for more than it may do
    │   ├── NotFoundError                 404  no stored response (or item) with that id (or
    │   │                                      not one of the key's project)
    │   ├── RequestTimeoutError           408  the request body did not arrive in time
    │   ├── RateLimitedError              429  with `retry-after`: a key's rate or concurrency limit
    │   ├── PayloadTooLargeError          413  the request body is larger than the server takes
    │   ├── ConflictError                 409  the response is not in a state that allows this
    │   │   └── ContainerEndedError       a container that expired or was deleted takes no file
    │   ├── BadGatewayError               502  a backend answered what cannot be used (a moderation
    │   │                                      model's answer that is no verdict)
    │   └── UnavailableError              503  with `retry-after`: Temporal, the store or a worker
    │       │                                  cannot be reached for a moment
    │       ├── OverloadedError           503  as many responses in flight as
    │       │                                  this API process takes
    │       └── StoppingError             503  with `x-should-retry: false`: the process stopped
    │                                          while the response ran on (a retry would start
    │                                          another); it names where to get the response
    ├── UpstreamError                     raised inside activities about the inference backend
    │   ├── RetryableUpstreamError        408/409/5xx, refused or broken connections,
    │   │   │                             timeouts: the workflow retries, within its attempts
    │   │   └── RateLimitedUpstreamError  429: the deployment's budget learns from it; the
    │   │                                 response waits for capacity and spends no attempt
    │   ├── CapacityWaitError             the deployment's budget has no slot near enough: the
    │   │                                 response waits for capacity (durably, in the workflow)
    │   ├── RejectedByUpstreamError       other 4xx (a bad key, an unknown model): the response
    │   │   │                             fails at once with the backend's message
    │   │   └── ContextWindowExceededError  the backend said the input is longer than its context
    │   │                                 window: the response fails `context_length_exceeded`
    │   └── MisconfiguredUpstreamError    a host that does not resolve, a TLS handshake that
    │                                     fails: the setting is wrong, the response fails at once
    ├── McpServerError                    raised inside MCP activities about an MCP server
    │   ├── McpUnreachableError           connection failures, timeouts, 408/429/5xx: Temporal retries
    │   ├── McpRejectedError              other 4xx, protocol errors: retrying cannot help
    │   └── McpSentBeforeError            an earlier attempt sent a call that must run at most
    │                                     once: its outcome is unknown, it is not sent again
    ├── ModerationError                   a moderation call failed (`retryable` says whether trying
    │                                     again can help); past its budget, the check fails closed
    ├── SearchError                       raised inside the web search activity about its provider
    │   ├── SearchUnavailableError        5xx, 429, timeouts, refused connections: Temporal retries
    │   └── SearchRefusedError            a refused key, other 4xx, an answer not understood: the
    │                                     call fails at once and the model is told
    ├── UnreadableFileError               a file in a vector store has no text to search: of a type
    │                                     not read (`unsupported_file`) or not what its name says
    │                                     (`invalid_file`); its ingestion fails, never retried
    ├── SecretsUnavailableError           MCP secrets cannot be sealed or opened: no SECRETS_KEY,
    │   │                                 or not the one that sealed them
    │   └── SealedElsewhereError          a sealed blob that no key of the ring opens for this
    │                                     purpose and project (another server's, project's or
    │                                     purpose's, or tampered with)
    ├── StoreUnavailableError             the database went away mid-transaction, or did not come
    │                                     back in time: nothing of the transaction was kept; the
    │                                     API answers 503 (clients retry), activities are retried
    ├── StoreRefusedError                 the database refused a value (text with NUL, a number out of
    │                                     range): trying again cannot mend it
    ├── SchemaTooNewError                 the database was migrated by a newer version than this one
    ├── EgressRefusedError                an outbound connection to an address the egress policy
    │                                     does not allow (`access/egress.py`)
    ├── ReplyTooLargeError                a reply from a URL a tenant chose grew past what is read
    │                                     of one (`access/egress.py`)
    ├── SandboxFailedError                a container's sandbox ended before it was up (its runtime
    │                                     refused, the Python it binds is not there): trying again
    │                                     on the same host cannot mend it; the call fails and the
    │                                     model is told, the worker's log says why
    ├── WebhookUndeliveredError           an endpoint did not take a delivery: tried again, with backoff
    ├── WebhookRefusedError               a delivery that trying again cannot mend (egress refused)
    ├── WebhookEndpointGoneError          the project's endpoint was deleted: not tried again
    ├── IllegalTransition                 a trigger the response's state machine does not allow
    │                                     in its state (`workflows/machine.py`)
    ├── StartupError                      a process cannot start: a setting names what does not
    │   │                                 exist or cannot be reached; the CLI says so in one line
    │   └── ModerationSettingError        a moderation setting (`MODERATION_*`) out of range
    ├── ResponseFailedError               raised in the workflow to end a response `failed` with
    │                                     its message (an MCP server that cannot be listed)
    └── CancelRequestedError              raised inside an activity that stopped because the
                                          client cancelled its response; ends it `cancelled`

`ApiError` carries the four fields of OpenAI's error object (`message`, `type`, `param`,
`code`) so the API layer renders every one the same way.
"""

from __future__ import annotations

from typing import Any


class DurableResponsesError(Exception):
    """Root of every error this project raises on purpose."""


class ApiError(DurableResponsesError):
    status_code = 500
    error_type = "server_error"

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code

    def headers(self) -> dict[str, str] | None:
        """HTTP headers that go with the answer."""
        return None

    def to_body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.error_type,
                "param": self.param,
                "code": self.code,
            }
        }


class InvalidRequestError(ApiError):
    status_code = 400
    error_type = "invalid_request_error"


class ApprovalAlreadyAnsweredError(InvalidRequestError):
    def __init__(self, approval_request_ids: list[str], *, decided_in_inbox: bool = False) -> None:
        names = ", ".join(f"'{request_id}'" for request_id in approval_request_ids)
        where = (
            " in the approvals inbox; leave it out of `input` and this response applies that decision"
            if decided_in_inbox
            else "; an approval request is answered once"
        )
        super().__init__(
            f"MCP approval request {names} has already been answered{where}.",
            param="approval_request_id",
            code="invalid_value",
        )


class ContextLengthExceededError(InvalidRequestError):
    def __init__(self, tokens: int, window: int) -> None:
        super().__init__(
            f"Your input exceeds the context window of this model: it takes about {tokens} tokens, and the model "
            f'takes at most {window}. Shorten the input, or set `truncation` to "auto" (the oldest items are '
            "left out) or `context_management` to compact it.",
            param="input",
            code="context_length_exceeded",
        )
        self.tokens = tokens
        self.window = window


class AuthenticationError(ApiError):
    status_code = 401
    error_type = "invalid_request_error"


class PermissionDeniedError(ApiError):
    status_code = 403
    error_type = "invalid_request_error"


class NotFoundError(ApiError):
    status_code = 404
    error_type = "invalid_request_error"


class RequestTimeoutError(ApiError):
    status_code = 408
    error_type = "invalid_request_error"


class RateLimitedError(ApiError):
    status_code = 429
    error_type = "requests"

    def __init__(self, message: str, *, retry_after_seconds: int = 1) -> None:
        super().__init__(message, code="rate_limit_exceeded")
        self.retry_after_seconds = retry_after_seconds

    def headers(self) -> dict[str, str]:
        return {"retry-after": str(self.retry_after_seconds)}


class PayloadTooLargeError(ApiError):
    status_code = 413
    error_type = "invalid_request_error"


class ConflictError(ApiError):
    status_code = 409
    error_type = "invalid_request_error"


class ContainerEndedError(ConflictError):
    """A file for a container no longer running (expired, or deleted): never kept, as nothing
    would count it or remove it."""

    def __init__(self, container_id: str) -> None:
        super().__init__(
            f"Container with id '{container_id}' is no longer running (it expired or was deleted): it takes no file.",
            param="container_id",
        )


class UnavailableError(ApiError):
    """Unavailable for a moment: the answer says when to try again (`retry-after`)."""

    status_code = 503
    error_type = "server_error"

    def __init__(
        self, message: str, *, param: str | None = None, code: str | None = None, retry_after_seconds: int = 1
    ) -> None:
        super().__init__(message, param=param, code=code)
        self.retry_after_seconds = retry_after_seconds

    def headers(self) -> dict[str, str]:
        return {"retry-after": str(self.retry_after_seconds)}


class BadGatewayError(ApiError):
    """A backend this server asked answered what it cannot use (no retry mends it)."""

    status_code = 502
    error_type = "server_error"


class OverloadedError(UnavailableError):
    def __init__(self, message: str, *, retry_after_seconds: int = 1) -> None:
        super().__init__(message, code="server_overloaded", retry_after_seconds=retry_after_seconds)


class StoppingError(UnavailableError):
    def __init__(self, message: str) -> None:
        super().__init__(message, code="server_stopping")

    def headers(self) -> dict[str, str]:
        return {"x-should-retry": "false"}  # the OpenAI SDKs' own header: do not retry


class UpstreamError(DurableResponsesError):
    """A failure of the inference backend, raised inside an activity."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code


class RetryableUpstreamError(UpstreamError):
    def __init__(self, message: str, *, status_code: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message, status_code=status_code)
        self.retry_after = retry_after


class RateLimitedUpstreamError(RetryableUpstreamError):
    """A 429. `provider_rate`: the requests a second the provider's `x-ratelimit-limit-requests`
    states (a limit a minute), when it sends one."""

    def __init__(self, message: str, *, retry_after: float | None = None, provider_rate: float | None = None) -> None:
        super().__init__(message, status_code=429, retry_after=retry_after)
        self.provider_rate = provider_rate


class CapacityWaitError(UpstreamError):
    """No slot of the deployment's budget is near enough: come back after `wait_seconds`.
    `deployment`: the deployment waited on, as the response's details show it
    (`Deployment.shown_for`); `deployment_id`: its id."""

    def __init__(self, deployment: str, wait_seconds: float, *, deployment_id: str = "") -> None:
        super().__init__(f"waiting for capacity on {deployment}")
        self.deployment = deployment
        self.deployment_id = deployment_id or deployment
        self.wait_seconds = wait_seconds


class RejectedByUpstreamError(UpstreamError):
    pass


class ContextWindowExceededError(RejectedByUpstreamError):
    """The request was longer than the backend's context window: sending it again cannot
    help. `window` and `tokens` are what the backend said, when it said them."""

    code = "context_length_exceeded"

    def __init__(
        self, message: str, *, status_code: int | None = 400, window: int | None = None, tokens: int | None = None
    ) -> None:
        super().__init__(message, status_code=status_code)
        self.window = window
        self.tokens = tokens


class MisconfiguredUpstreamError(UpstreamError):
    """The backend's address cannot work as configured: retrying cannot mend it."""


class StoreUnavailableError(DurableResponsesError):
    """The store could not complete a transaction for want of a connection."""


class StoreRefusedError(DurableResponsesError):
    """The database refused a value it cannot hold (PostgreSQL: text with NUL, a number out of
    its column's range): the same write fails every time, so no activity retries it."""


class SchemaTooNewError(DurableResponsesError):
    """The database was migrated by a newer version of durable-responses than this one."""


class StartupError(DurableResponsesError):
    """A process cannot start; its message is the one line the CLI prints before exiting."""


class CancelRequestedError(DurableResponsesError):
    """The client cancelled the response while an activity worked on it."""


class McpServerError(DurableResponsesError):
    """An MCP server could not be listed or called. `code` is an HTTP status (502 when the
    server could not be reached, 504 when it stopped answering), or a JSON-RPC error code."""

    def __init__(self, message: str, *, code: int = 502, protocol: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.protocol = protocol


class McpUnreachableError(McpServerError):
    pass


class McpRejectedError(McpServerError):
    pass


class McpSentBeforeError(McpServerError):
    """An earlier attempt already sent this call, which may not run twice: whether it ran is
    unknown, and it is not sent again."""


class SearchError(DurableResponsesError):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SearchUnavailableError(SearchError):
    pass


class SearchRefusedError(SearchError):
    pass


class UnreadableFileError(DurableResponsesError):
    """A file in a vector store has no text to search: its type is not one we read
    (`unsupported_file`) or it is not what its name says (`invalid_file`)."""

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class SecretsUnavailableError(DurableResponsesError):
    pass


class SealedElsewhereError(SecretsUnavailableError):
    pass


class ResponseFailedError(DurableResponsesError):
    def __init__(self, message: str, code: str = "server_error") -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class SandboxFailedError(DurableResponsesError):
    """A container's sandbox ended before it was up: not tried again; what the runtime said is in
    the worker's log, not in the message (it names the host's paths)."""


class WebhookUndeliveredError(DurableResponsesError):
    """A webhook endpoint did not take a delivery (no answer, or not a 2xx): it is tried
    again, with backoff, for as long as the webhook policy allows."""


class WebhookRefusedError(DurableResponsesError):
    """A delivery that cannot succeed by trying again: the egress policy does not allow the
    endpoint's address."""


class WebhookEndpointGoneError(DurableResponsesError):
    """A delivery to a project's webhook endpoint that was deleted after the response began:
    nobody wants the event any more, so it is not tried again."""
