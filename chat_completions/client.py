"""The chat-completions backend over HTTP: one request, answered whole or as a stream of
chunks, every failure raised as an `UpstreamError` that says whether retrying can help and,
in words a newcomer can act on, which backend failed and why: a host that does not resolve,
a refused connection, a TLS failure, a refused key, an unknown model.

The failure's message is the response's error, which a tenant reads: it names the backend
as the operator named it (`name`: "the inference backend", or a deployment's id), never by
its URL, and what the backend said is redacted (`chat_completions/redaction.py`). The operator's
log says at which URL a setting needs fixing (a refused key, a host that does not resolve).

Deliberately small. The `openai` SDK transforms every request's parameters recursively,
builds a pydantic model for every streamed chunk and carries its own retry machinery, which
Temporal replaces: on a streamed response that was about a third of the Python time spent on
the way to the first delta. Here a request is one JSON body out and JSON (or SSE lines of
JSON) back, parsed with orjson, over aiohttp (0.1-0.2 ms of CPU a request where httpx took
0.7-1.0 ms, measured against the scripted backend). It never retries; Temporal owns retries.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from http import HTTPStatus
from typing import Any, Protocol
from urllib.parse import urlsplit

import aiohttp
import orjson

from chat_completions.redaction import redacted
from context.overflow import overflow_in
from models.errors import (
    ContextWindowExceededError,
    MisconfiguredUpstreamError,
    RateLimitedUpstreamError,
    RejectedByUpstreamError,
    RetryableUpstreamError,
    UpstreamError,
)

log = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 409, 429})
MAX_RETRY_AFTER_SECONDS = 300.0
"""The longest wait an upstream's `Retry-After` buys: the workflow honours it between attempts
(`workflows/upstream_retry.py`), and a response must end in bounded time whatever it says."""
CONNECT_TIMEOUT_SECONDS = 10.0
Chunk = dict[str, Any]
HeadersSeen = Callable[[Mapping[str, str]], None]
"""Told the headers of a successful answer (its `x-ratelimit-*` say how much budget is left)."""


class ChatBackend(Protocol):
    """What the inference activity needs of a backend: this module's HTTP client, or the
    built-in demo model (`demo/`)."""

    base_url: str

    async def complete(self, body: dict[str, Any], on_headers: HeadersSeen | None = None) -> dict[str, Any]: ...

    async def embeddings(self, body: dict[str, Any]) -> dict[str, Any]: ...

    async def moderations(self, body: dict[str, Any]) -> dict[str, Any]: ...

    def stream(
        self, body: dict[str, Any], on_headers: HeadersSeen | None = None
    ) -> AbstractAsyncContextManager[AsyncIterator[list[Chunk]]]:
        """The chunks of a streamed completion, in batches: those that arrived together."""

    async def aclose(self) -> None: ...


def shown_url(url: str) -> str:
    """A URL as logs and error messages may show it: no credentials, no query."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not readable as a URL (an unclosed IPv6 bracket): nothing of it is shown
        return "(not a URL)"
    if "@" in parts.netloc:
        url = url.replace(parts.netloc, parts.netloc.rsplit("@", 1)[1], 1)
    return url.split("#", 1)[0].split("?", 1)[0]


class ChatClient:
    def __init__(
        self, base_url: str, api_key: str, *, timeout_seconds: float, name: str = "the inference backend"
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.name = name
        self._shown = shown_url(self.base_url)
        self._secrets = [api_key] if api_key else []
        self._has_key = bool(api_key)
        self._headers = {"content-type": "application/json", "user-agent": "durable-responses"}
        if api_key:
            self._headers["authorization"] = f"Bearer {api_key}"
        self._timeout = aiohttp.ClientTimeout(
            total=timeout_seconds, sock_connect=min(CONNECT_TIMEOUT_SECONDS, timeout_seconds)
        )
        self._url = f"{self.base_url}/chat/completions"
        self._session: aiohttp.ClientSession | None = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:  # made in the running loop, on first use
            self._session = aiohttp.ClientSession(
                headers=self._headers, timeout=self._timeout, connector=aiohttp.TCPConnector(limit=0)
            )
        return self._session

    async def complete(self, body: dict[str, Any], on_headers: HeadersSeen | None = None) -> dict[str, Any]:
        """One whole chat completion."""
        try:
            async with self._http().post(self._url, data=orjson.dumps(body)) as answer:
                content = await answer.read()
                if answer.status >= 400:
                    raise self._status_failure(answer.status, answer.headers, content, body)
                if on_headers is not None:
                    on_headers(answer.headers)
        except (TimeoutError, aiohttp.ClientError) as error:
            raise self._transport_failure(error) from error
        return _json(content)

    async def embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        """One call of the backend's `/embeddings`."""
        return await self._post_json("embeddings", body)

    async def moderations(self, body: dict[str, Any]) -> dict[str, Any]:
        """One call of the backend's `/moderations` (OpenAI's shape)."""
        return await self._post_json("moderations", body)

    async def _post_json(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            async with self._http().post(f"{self.base_url}/{path}", data=orjson.dumps(body)) as answer:
                content = await answer.read()
                if answer.status >= 400:
                    raise self._status_failure(answer.status, answer.headers, content, body)
        except (TimeoutError, aiohttp.ClientError) as error:
            raise self._transport_failure(error) from error
        return _json(content)

    @asynccontextmanager
    async def stream(
        self, body: dict[str, Any], on_headers: HeadersSeen | None = None
    ) -> AsyncIterator[AsyncIterator[list[Chunk]]]:
        """A streamed chat completion: its chunks as the backend sends them, those of one
        network read together (a long reply a word a chunk is many per read: one async step
        a read, not one a word)."""
        try:
            async with self._http().post(self._url, data=orjson.dumps(body | {"stream": True})) as answer:
                if answer.status >= 400:
                    raise self._status_failure(answer.status, answer.headers, await answer.read(), body)
                if on_headers is not None:
                    on_headers(answer.headers)
                yield _chunks(answer)
        except (TimeoutError, aiohttp.ClientError) as error:
            raise self._transport_failure(error) from error

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()

    def _transport_failure(self, error: aiohttp.ClientError | asyncio.TimeoutError) -> UpstreamError:
        """Connection failures. A host that does not resolve and a failed TLS handshake are
        settings to fix, not weather to wait out: they fail the response at once."""
        failure: UpstreamError
        if isinstance(error, asyncio.TimeoutError):
            failure = RetryableUpstreamError(f"{self.name} did not answer in time ({type(error).__name__})")
        elif isinstance(error, aiohttp.ClientConnectorDNSError):
            failure = MisconfiguredUpstreamError(
                f"{self.name}: its host name does not resolve ({_os_cause(error)}); check INFERENCE_BASE_URL"
            )
        elif isinstance(error, aiohttp.ClientSSLError):
            failure = MisconfiguredUpstreamError(f"{self.name}: TLS handshake failed ({_os_cause(error)})")
        elif isinstance(error, aiohttp.ClientConnectorError) and isinstance(error.os_error, ConnectionRefusedError):
            failure = RetryableUpstreamError(f"{self.name} is unreachable: connection refused (is it running?)")
        elif isinstance(error, aiohttp.ClientConnectorError):
            failure = RetryableUpstreamError(f"{self.name} is unreachable: {_os_cause(error)}")
        else:
            failure = RetryableUpstreamError(f"{self.name}: the connection broke ({type(error).__name__})")
        if isinstance(failure, MisconfiguredUpstreamError):
            self._tell_operator(failure)
        return failure

    def _status_failure(
        self, status: int, headers: Mapping[str, str], content: bytes, body: dict[str, Any]
    ) -> UpstreamError:
        """408/409/429/5xx can be retried; any other 4xx fails the response at once, with the
        backend's words (redacted) and, for the usual ones, what to check."""
        try:
            parsed = orjson.loads(content) if content else None
        except orjson.JSONDecodeError:
            parsed = None
        said = _message_of(parsed) if isinstance(parsed, dict) else content[:300].decode(errors="replace").strip()
        message = f"{self.name} answered {status}: {redacted(said, self._secrets) or _reason(status)}"
        failure: UpstreamError
        if status == 429:
            failure = RateLimitedUpstreamError(
                message, retry_after=retry_after_seconds(headers), provider_rate=provider_rate(headers)
            )
        elif status in RETRYABLE_STATUS or status >= 500:
            failure = RetryableUpstreamError(message, status_code=status, retry_after=retry_after_seconds(headers))
        else:
            if status == 401:
                hint = "the API key was refused" if self._has_key else "it wants an API key and none is set"
                message += f" ({hint}: set INFERENCE_API_KEY)"
            elif status == 404:
                message += f" (is model {body.get('model')!r} served there, and does INFERENCE_BASE_URL end in /v1?)"
            overflow = overflow_in(status, parsed, said)
            failure = (
                ContextWindowExceededError(message, status_code=status, window=overflow.window, tokens=overflow.tokens)
                if overflow is not None
                else RejectedByUpstreamError(message, status_code=status)
            )
        if isinstance(failure, RejectedByUpstreamError):
            self._tell_operator(failure)
        return failure

    def _tell_operator(self, failure: UpstreamError) -> None:
        """A setting to fix, with the URL it failed at, in the operator's log (the tenant sees
        neither the URL nor the backend's words unredacted). Failures that are retried are
        logged by the activity, once an attempt, naming the deployment."""
        log.warning("%s at %s: %s", self.name, self._shown, failure.message)


async def _lines(answer: aiohttp.ClientResponse) -> AsyncIterator[list[bytes]]:
    """The body's lines, however long (aiohttp's own line reader stops at 64 KiB), those
    completed by one read together."""
    pending = bytearray()  # grows in place: a long line arriving in many pieces stays linear
    async for data in answer.content.iter_any():
        pending += data
        if b"\n" not in data:
            continue
        *complete, rest = pending.split(b"\n")
        pending = bytearray(rest)
        yield [bytes(line.rstrip(b"\r")) for line in complete]
    if pending:
        yield [bytes(pending)]


async def _chunks(answer: aiohttp.ClientResponse) -> AsyncIterator[list[Chunk]]:
    """Server-sent events: each `data:` line holds one chunk; `[DONE]` ends the stream."""
    async for lines in _lines(answer):
        batch: list[Chunk] = []
        for line in lines:
            if not line.startswith(b"data:"):
                continue  # blank separators, comments, `event:` names
            data = line[5:].strip()
            if data == b"[DONE]":
                if batch:
                    yield batch
                return
            chunk = _json(data)
            if "error" in chunk and "choices" not in chunk:  # an error reported inside the stream
                raise RetryableUpstreamError(
                    f"the inference backend reported an error mid-stream: {redacted(_message_of(chunk))}"
                )
            batch.append(chunk)
        if batch:
            yield batch


def _json(content: bytes | str) -> dict[str, Any]:
    try:
        parsed = orjson.loads(content)
    except orjson.JSONDecodeError:
        preview = content[:200] if isinstance(content, str) else content[:200].decode(errors="replace")
        raise RetryableUpstreamError(
            f"the inference backend answered with something that is not JSON: {redacted(preview)!r}"
        ) from None
    if not isinstance(parsed, dict):
        raise RetryableUpstreamError("the inference backend answered with JSON that is not an object")
    return parsed


def _os_cause(error: aiohttp.ClientConnectorError) -> str:
    cause = error.os_error
    return (getattr(cause, "strerror", None) or str(cause) or type(cause).__name__) if cause else str(error)


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "error"


def _message_of(body: dict[str, Any]) -> str:
    inner = body.get("error", body)
    if isinstance(inner, dict) and inner.get("message"):
        return str(inner["message"])
    if isinstance(inner, str):
        return inner
    return str(body.get("message") or "")


def provider_rate(headers: Mapping[str, str]) -> float | None:
    """Requests a second from `x-ratelimit-limit-requests` (OpenAI's and others': a limit a
    minute), when the provider sends a readable one."""
    try:
        limit = float(headers.get("x-ratelimit-limit-requests") or "")
    except ValueError:
        return None
    return limit / 60.0 if 0 < limit < float("inf") else None


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def exhausted_for(headers: Mapping[str, str]) -> float | None:
    """Seconds until the provider takes requests again, when a successful answer's
    `x-ratelimit-remaining-requests` says none is left (OpenAI's `x-ratelimit-reset-requests`:
    "1s", "6m0s", "20ms", or seconds); None while some are left or nothing is said."""
    try:
        remaining = float(headers.get("x-ratelimit-remaining-requests") or "")
    except ValueError:
        return None
    if remaining != 0:
        return None
    reset = (headers.get("x-ratelimit-reset-requests") or "").strip()
    try:
        seconds = float(reset)
    except ValueError:
        parts = _DURATION.findall(reset)
        units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
        seconds = sum(float(number) * units[unit] for number, unit in parts) if parts else 1.0
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_SECONDS) if seconds == seconds else 1.0


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The upstream's `retry-after-ms` or `retry-after` (seconds or an HTTP date), as a wait of
    0 to MAX_RETRY_AFTER_SECONDS; None when it says nothing readable."""
    said: float | None = None
    if headers.get("retry-after-ms"):
        try:
            said = float(headers["retry-after-ms"]) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if said is None and value:
        try:
            said = float(value)
        except ValueError:
            try:
                parsed = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError):
                parsed = None
            said = parsed.timestamp() - time.time() if parsed else None
    if said is None or said != said:  # nothing, or NaN
        return None
    return min(max(0.0, said), MAX_RETRY_AFTER_SECONDS)
