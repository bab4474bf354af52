"""The chat-completions backend over HTTP: one request, answered whole or as a stream of
chunks, every failure raised as an `UpstreamError` that says whether retrying can help.

Deliberately small. The `openai` SDK transforms every request's parameters recursively,
builds a pydantic model for every streamed chunk and carries its own retry machinery, which
Temporal replaces: on a streamed response that was about a third of the Python time spent on
the way to the first delta. Here a request is one JSON body out and JSON (or SSE lines of
JSON) back, parsed with orjson. It never retries; Temporal owns retries.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import orjson

from models.errors import RejectedByUpstreamError, RetryableUpstreamError, UpstreamError

RETRYABLE_STATUS = frozenset({408, 409, 429})
CONNECT_TIMEOUT_SECONDS = 10.0
Chunk = dict[str, Any]


class ChatClient:
    def __init__(self, base_url: str, api_key: str, *, timeout_seconds: float) -> None:
        self.base_url = base_url.rstrip("/")
        headers = {"content-type": "application/json", "user-agent": "durable-responses"}
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        self._http = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(timeout_seconds, connect=min(CONNECT_TIMEOUT_SECONDS, timeout_seconds)),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=100),
        )
        self._url = f"{self.base_url}/chat/completions"

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """One whole chat completion."""
        try:
            answer = await self._http.post(self._url, content=orjson.dumps(body))
        except httpx.HTTPError as error:
            raise _transport_failure(error) from error
        if answer.status_code >= 400:
            raise _status_failure(answer.status_code, answer.headers, answer.content)
        return _json(answer.content)

    @asynccontextmanager
    async def stream(self, body: dict[str, Any]) -> AsyncIterator[AsyncIterator[Chunk]]:
        """A streamed chat completion: its chunks, as the backend sends them."""
        request = self._http.build_request("POST", self._url, content=orjson.dumps(body | {"stream": True}))
        try:
            answer = await self._http.send(request, stream=True)
        except httpx.HTTPError as error:
            raise _transport_failure(error) from error
        try:
            if answer.status_code >= 400:
                raise _status_failure(answer.status_code, answer.headers, await answer.aread())
            yield _chunks(answer)
        except httpx.HTTPError as error:
            raise _transport_failure(error) from error
        finally:
            await answer.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()


async def _chunks(answer: httpx.Response) -> AsyncIterator[Chunk]:
    """Server-sent events: each `data:` line holds one chunk; `[DONE]` ends the stream."""
    async for line in answer.aiter_lines():
        if not line.startswith("data:"):
            continue  # blank separators, comments, `event:` names
        data = line[5:].strip()
        if data == "[DONE]":
            return
        chunk = _json(data)
        if "error" in chunk and "choices" not in chunk:  # an error reported inside the stream
            raise RetryableUpstreamError(f"inference backend reported an error mid-stream: {_message_of(chunk)}")
        yield chunk


def _json(content: bytes | str) -> dict[str, Any]:
    try:
        parsed = orjson.loads(content)
    except orjson.JSONDecodeError:
        preview = content[:200] if isinstance(content, str) else content[:200].decode(errors="replace")
        raise RetryableUpstreamError(f"inference backend answered with something that is not JSON: {preview!r}") from None
    if not isinstance(parsed, dict):
        raise RetryableUpstreamError("inference backend answered with JSON that is not an object")
    return parsed


def _transport_failure(error: httpx.HTTPError) -> UpstreamError:
    if isinstance(error, httpx.TimeoutException):
        return RetryableUpstreamError(f"inference backend did not answer in time ({type(error).__name__})")
    if isinstance(error, (httpx.ConnectError, httpx.ConnectTimeout)):
        return RetryableUpstreamError(f"inference backend unreachable: {error or type(error).__name__}")
    return RetryableUpstreamError(f"inference backend connection broke: {error or type(error).__name__}")


def _status_failure(status: int, headers: httpx.Headers, content: bytes) -> UpstreamError:
    """408/409/429/5xx can be retried; any other 4xx fails the response with the backend's words."""
    try:
        body = orjson.loads(content) if content else None
    except orjson.JSONDecodeError:
        body = None
    said = _message_of(body) if isinstance(body, dict) else content[:300].decode(errors="replace").strip()
    message = f"inference backend answered {status}: {said or httpx.codes.get_reason_phrase(status)}"
    if status in RETRYABLE_STATUS or status >= 500:
        return RetryableUpstreamError(message, status_code=status, retry_after=_retry_after(headers))
    return RejectedByUpstreamError(message, status_code=status)


def _message_of(body: dict[str, Any]) -> str:
    inner = body.get("error", body)
    if isinstance(inner, dict) and inner.get("message"):
        return str(inner["message"])
    if isinstance(inner, str):
        return inner
    return str(body.get("message") or "")


def _retry_after(headers: httpx.Headers) -> float | None:
    if headers.get("retry-after-ms"):
        try:
            return float(headers["retry-after-ms"]) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value)
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None
