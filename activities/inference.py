"""The inference activity: one chat-completions call to the upstream backend.

It loads the chat context from the store by response id, sends it, keeps the reply in the
store, and returns only what is new. Retries belong to Temporal: the client never retries,
and failures are raised as `ApplicationError`s that say whether retrying can help.
"""

from __future__ import annotations

import email.utils
import time
from datetime import timedelta
from typing import Any

import httpx
import openai
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import chat_format
from activities.cancel_watch import unless_cancelled
from activities.event_emitter import EventEmitter
from activities.stream_assembler import StreamAssembler, streamed_from_events
from models.activity_io import InferenceInput, InferenceResult
from models.errors import CancelRequestedError, RejectedByUpstreamError, RetryableUpstreamError, UpstreamError
from models.ids import new_id
from models.responses import InputTokensDetails, OutputTokensDetails, Usage
from store.repository import ResponseRepository

RETRYABLE_STATUS = frozenset({408, 409, 429})


class InferenceActivities:
    def __init__(self, repository: ResponseRepository, client: openai.AsyncOpenAI) -> None:
        self.repository = repository
        self.client = client

    @activity.defn(name="run_inference")
    async def run_inference(self, request: InferenceInput) -> InferenceResult:
        context = await self._context(request)
        kwargs = chat_format.build_chat_request(
            request.response, context, str(self.client.base_url), request.mcp_functions
        )
        call = self._streamed(request, kwargs) if request.emit_events else self._whole(request, kwargs)
        try:
            result, message = await unless_cancelled(self.repository.cancels, request.response.id, call)
        except (openai.OpenAIError, httpx.HTTPError) as error:
            raise to_application_error(classify(error)) from error
        except CancelRequestedError as error:
            raise ApplicationError(str(error), type=type(error).__name__, non_retryable=True) from error
        await self.repository.save_chat_context(request.response.id, context + [chat_format.assistant_message(message)])
        return result

    async def _whole(self, request: InferenceInput, kwargs: dict[str, Any]) -> tuple[InferenceResult, dict[str, Any]]:
        completion = await self.client.chat.completions.create(**kwargs)
        if not completion.choices:
            raise to_application_error(RetryableUpstreamError("the backend answered with no choices"))
        choice = completion.choices[0]
        message = _with_call_ids(choice.message.model_dump(exclude_none=True))
        result = InferenceResult(
            output=chat_format.assistant_to_output(message, request.mcp_functions),
            finish_reason=_finish_reason(choice.finish_reason, message),
            usage=_usage(completion.usage),
        )
        return result, message

    async def _streamed(self, request: InferenceInput, kwargs: dict[str, Any]) -> tuple[InferenceResult, dict[str, Any]]:
        """Deltas go to the event log as the upstream chunks arrive; history gets only the result."""
        response_id = request.response.id
        earlier = await self.repository.events.item_events(response_id, from_output_index=request.output_offset)
        assembler = StreamAssembler(
            request.output_offset, streamed_from_events(earlier),
            mcp_functions={function.function_name: function for function in request.mcp_functions},
        )
        emitter = EventEmitter(self.repository.events, response_id)
        finish_reason: str | None = None
        usage: Any = None
        try:
            stream = await self.client.chat.completions.create(
                **kwargs, stream=True, stream_options={"include_usage": True}
            )
            async for chunk in stream:
                usage = chunk.usage or usage
                for choice in chunk.choices:
                    finish_reason = choice.finish_reason or finish_reason
                    emitter.emit(assembler.feed(choice.delta.model_dump(exclude_none=True)))
            events, output, message = assembler.finish()
            emitter.emit(events)
        finally:
            await emitter.close()
        result = InferenceResult(
            output=output, finish_reason=_finish_reason(finish_reason, message), usage=_usage(usage)
        )
        return result, message

    async def _context(self, request: InferenceInput) -> list[dict[str, Any]]:
        if request.turn > 0:
            saved = await self.repository.chat_context(request.response.id) or []
            return saved + chat_format.tool_messages(request.tool_results)
        base, raw_items = await self.repository.turn_inputs(request.response.id, request.response.previous_response_id)
        items = chat_format.parse_items(raw_items)
        # Results of calls the previous response left open (approved, refused, unanswered)
        # follow its context; those of requests passed back in `input` follow them there.
        in_items = {item.id for item in items if item.type == "mcp_approval_request"}
        closing = {call_id: text for call_id, text in request.tool_results.items() if call_id not in in_items}
        return base + chat_format.tool_messages(closing) + chat_format.items_to_messages(items, request.tool_results)


def _with_call_ids(message: dict[str, Any]) -> dict[str, Any]:
    for call in message.get("tool_calls") or []:
        call.setdefault("id", new_id("call"))
        if not call["id"]:
            call["id"] = new_id("call")
    return message


def _finish_reason(reason: str | None, message: dict[str, Any]) -> str:
    if reason in ("stop", "length", "tool_calls", "content_filter"):
        return reason
    return "tool_calls" if message.get("tool_calls") else "stop"


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    cached = getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", None) or 0
    reasoning = getattr(getattr(usage, "completion_tokens_details", None), "reasoning_tokens", None) or 0
    return Usage(
        input_tokens=usage.prompt_tokens or 0,
        input_tokens_details=InputTokensDetails(cached_tokens=cached),
        output_tokens=usage.completion_tokens or 0,
        output_tokens_details=OutputTokensDetails(reasoning_tokens=reasoning),
        total_tokens=usage.total_tokens or 0,
    )


def classify(error: openai.OpenAIError | httpx.HTTPError) -> UpstreamError:
    """Whether retrying can help: 408/409/429/5xx and connection failures can."""
    if isinstance(error, httpx.HTTPError):  # a stream broken after its headers arrived
        return RetryableUpstreamError(f"inference backend stream broke: {error!r}")
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        message = f"inference backend answered {status}: {_backend_message(error)}"
        if status in RETRYABLE_STATUS or status >= 500:
            return RetryableUpstreamError(message, status_code=status, retry_after=_retry_after(error.response))
        return RejectedByUpstreamError(message, status_code=status)
    if isinstance(error, (openai.APIConnectionError, openai.APITimeoutError)):
        return RetryableUpstreamError(f"inference backend unreachable: {error}")
    return RejectedByUpstreamError(f"inference backend error: {error}")


def to_application_error(error: UpstreamError) -> ApplicationError:
    if isinstance(error, RetryableUpstreamError):
        return ApplicationError(
            error.message,
            type=type(error).__name__,
            next_retry_delay=timedelta(seconds=error.retry_after) if error.retry_after else None,
        )
    return ApplicationError(error.message, type=type(error).__name__, non_retryable=True)


def _backend_message(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return error.message


def _retry_after(response: Any) -> float | None:
    headers = getattr(response, "headers", None) or {}
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
