"""The inference activity: one chat-completions call to the upstream backend.

It loads the chat context from the store by response id, sends it, keeps the reply in the
store, and returns only what is new. Retries belong to Temporal: the client never retries,
and failures are raised as `ApplicationError`s that say whether retrying can help.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.trace import Status, StatusCode
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import sealed_items, turn_claims, turn_failures
from activities.cancel_watch import unless_cancelled
from activities.capacity_waits import capacity_wait
from activities.event_emitter import EventEmitter
from activities.response_ends import ResponseEnds
from activities.single_flight import SingleFlight
from chat_completions import converter, reply
from chat_completions.client import ChatBackend, HeadersSeen
from chat_completions.stream_assembler import StreamAssembler
from chat_completions.streamed import streamed_from_events
from chat_completions.tool_table import ToolTable
from chat_completions.turn_messages import TurnMessages, turn_messages
from context import compaction
from context.plan import Compact, Send, compaction_threshold, overflow, plan
from context.tokens import message_tokens, messages_tokens, request_tokens
from guardrails.held_output import HeldOutput
from guardrails.moderator import Moderator
from guardrails.output_checks import checked_whole
from models import activity_names, history_budget
from models.activity_io import EndWritten, InferenceInput, InferenceResult
from models.errors import (
    CancelRequestedError,
    CapacityWaitError,
    ContextWindowExceededError,
    RetryableUpstreamError,
    UpstreamError,
)
from models.events import compaction_events
from models.hosted_tools import WEB_SEARCH
from models.ids import new_id
from models.items import CompactionItem
from models.responses import Usage
from sealing.secret_box import SecretBox
from store.cancels import CancelRequests
from store.chat_contexts import ContextBase
from store.event_log import EventLog
from store.parked import ParkedFields
from store.turns import Fence, TurnLost, Turns, TurnStart
from telemetry import metrics
from telemetry.tracing import inference_span
from upstream.clients import Upstreams
from upstream.gate import UpstreamGate
from upstream.pacing import Lane
from upstream.registry import Deployment
from upstream.windows import ContextWindows
from workflows.response_end import call_end


class InferenceActivities:
    def __init__(
        self,
        gate: UpstreamGate,
        upstreams: Upstreams,
        *,
        turns: Turns,
        events: EventLog,
        parked: ParkedFields,
        cancels: CancelRequests,
        secret_box: SecretBox | None,
        send_reasoning: bool = False,
        windows: ContextWindows | None = None,
        moderator: Moderator | None = None,
        announce_turns: bool = False,
        ends: ResponseEnds | None = None,
    ) -> None:
        self.turns = turns
        """Claims, records and releases of turns (`activities/turn_claims.py`)."""
        self.events = events
        self.parked = parked
        self.cancels = cancels
        self.secret_box = secret_box
        """Seals reasoning and compactions for the response's project."""
        self.announce_turns = announce_turns
        """An API process's own early calls, whose turns a worker elsewhere waits for: their
        ends are announced to other processes (`store/turns.py`'s `settled`), and a failed one
        gives its turn back uncounted, so the worker makes the attempt that counts, with its own
        configuration (an API server with a backend of its own must not fail a response)."""
        self.moderator = moderator or Moderator(gate.registry, upstreams, gate)
        """Checks the output of a response with a moderation plan (`guardrails/`)."""
        self.gate = gate
        self.upstreams = upstreams
        self.windows = windows or ContextWindows(gate.registry)
        self.send_reasoning = send_reasoning
        """Whether the backend is sent earlier turns' reasoning back (INFERENCE_SEND_REASONING)."""
        self.calls = SingleFlight()
        self.ends = ends
        """Writes the end of a response whose call may end it (`InferenceInput.may_end`); an
        API process's early calls have none (the workflow's own execution writes it)."""

    async def stop(self, grace_seconds: float = 0.0) -> None:
        """Make no new calls; give those running `grace_seconds` to finish, then abandon them
        (their claims are released, so another worker takes their turns over at once)."""
        await self.calls.close(grace_seconds)

    @activity.defn(name=activity_names.RUN_INFERENCE)
    async def run_inference(self, request: InferenceInput) -> InferenceResult:
        """One inference call per turn. An execution that repeats a turn (its workflow task
        ran again) joins the call still running in this process, waits for one running in
        another (`store/turns.py`), or returns the result recorded for the turn. A call that
        may end the response writes its end when the answer ends it (`may_end`)."""
        result = await self.calls.run(_turn_key(request), lambda: self._infer(request))
        at = int(time.time())
        if self.ends is None or (end := call_end(request, result, at)) is None:
            return result
        written = await self.ends.write(end)
        return result.model_copy(update={"ended": EndWritten(at=at, status=end.response.status, written=written)})

    def begin(self, request: InferenceInput, *, kept: bool = True) -> asyncio.Future[InferenceResult] | None:
        """Start a turn's call before its workflow asks for it (`activities/early_calls.py`):
        the workflow's execution of the turn joins it, or (`kept`: it runs in this process)
        takes its outcome when it ended first (a failure too: the attempt is the workflow's to
        see and retry, as any other). None when this process is stopping."""
        if self.calls.closed:
            return None
        return self.calls.start(_turn_key(request), lambda: self._infer(request), kept=kept)

    def forget_early(self, request: InferenceInput) -> None:
        """An early call whose workflow never started: nothing will come for its outcome."""
        self.calls.forget(_turn_key(request))

    async def _infer(self, request: InferenceInput) -> InferenceResult:
        try:
            return await unless_cancelled(self.cancels.notifier, request.response.id, self._turn(request))
        except CancelRequestedError as error:
            raise turn_failures.cancelled(error) from error

    async def _turn(self, request: InferenceInput) -> InferenceResult:
        fence = Fence(request.response.id, request.turn, holder=new_id("call"))
        start = await turn_claims.claimed(self.turns, fence, request)
        if start.recorded is not None:
            return await self._carried(request, InferenceResult.model_validate(start.recorded))
        if start.cancelled:
            raise CancelRequestedError(f"response {request.response.id} was cancelled")
        keeping = asyncio.ensure_future(turn_claims.kept(self.turns, fence, request.lease_seconds))
        try:
            turn_failures.raise_if_spent(start, request.max_attempts)
            functions = await self.parked.whole_functions(request.response.id, request.mcp_functions)
            set_up = {*request.set_up, *((WEB_SEARCH.name,) if request.web_search else ())}
            table = ToolTable(request.response.tools, functions, set_up=set_up)
            tool_results = await self.parked.tool_texts(request.response.id, request.tool_results)
            assembled = self._messages(request, start, table, tool_results)
            context, messages = assembled.context, assembled.sent
            if not request.response.generate:  # WebSocket mode's warm-up: the input is context now
                result = InferenceResult(output=[], finish_reason="stop", usage=Usage())
                await self.turns.record(
                    fence, context, result.model_dump(mode="json"), base=start.base, announce=self.announce_turns
                )
                return await self._carried(request, result)
            whole = converter.build_chat_request(
                request.response, messages, None, table, send_reasoning=self.send_reasoning
            )
            if request.compact:
                fixed = request_tokens(whole) - messages_tokens(messages)  # instructions, tools
                return await self._compact(request, messages, fixed, fence)
            try:
                step = await self._plan(request, whole)
            except ContextWindowExceededError as error:
                metrics.context_step(request.response.model, "refused")
                raise turn_failures.to_application_error(error) from error
            if isinstance(step, Compact):
                metrics.context_step(request.response.model, "compacted")
                await self.turns.release(fence, None, announce=self.announce_turns)
                return InferenceResult(output=[], finish_reason="stop", usage=Usage(), compaction_due=True)
            if step.dropped:
                metrics.context_step(request.response.model, "truncated")
            sent = step.messages

            def body_for(base_url: str) -> dict[str, Any]:
                return whole | {"messages": sent} | converter.max_tokens_field(request.response, base_url)

            result, message = await self._call_upstream(request, body_for, table, fence)
            plan = request.response.moderation_plan
            if plan is not None and plan.output is not None and result.moderation is None:
                result, message = await checked_whole(self.moderator, plan, request, result, message)
            await self.turns.record(
                fence,
                context + [converter.assistant_message(message)],
                result.model_dump(mode="json"),
                base=start.base,
                announce=self.announce_turns,
            )
            return await self._carried(request, result)
        except BaseException as error:
            failed = (
                error
                if isinstance(error, ApplicationError)
                and error.type not in turn_failures.NOT_ATTEMPTS
                and not self.announce_turns  # an API's early call: the worker makes the attempt that counts
                else None
            )
            with contextlib.suppress(Exception):
                await asyncio.shield(
                    self.turns.release(fence, turn_failures.failure_record(failed), announce=self.announce_turns)
                )
            raise
        finally:
            keeping.cancel()

    async def _plan(self, request: InferenceInput, whole: dict[str, Any]) -> Send | Compact:
        """Send the context as it is, truncated, or compact it first (`context/plan.py`)."""
        response = request.response
        window = await self.windows.of(request.model_group or response.model)
        policy = response.compaction
        return plan(
            whole,
            window,
            truncation=response.truncation,
            compaction=policy is not None,
            threshold=compaction_threshold(policy.compact_threshold if policy else None, window),
            may_compact=not request.just_compacted,
        )

    async def _compact(
        self, request: InferenceInput, messages: list[dict[str, Any]], fixed: int, fence: Fence
    ) -> InferenceResult:
        """Summarise the context into a `compaction` item; the response's context starts
        afresh from it (what came before is in the summary). The summary and the kept message
        are made to fit under the threshold with the request's `fixed` tokens (instructions,
        tools): a summary the model wrote too long is cut, a kept message too long is summarised
        (`context/compaction.py`'s `room_for`)."""
        window = await self.windows.of(request.model_group or request.response.model)
        policy = request.response.compaction
        target = compaction_threshold(policy.compact_threshold if policy else None, window)
        if target is None and window is not None:  # `/v1/responses/compact`: room for what follows
            target = int(window * compaction.COMPACT_ONLY_SHARE)
        kept = compaction.kept_messages(messages)
        room = compaction.room_for(target, window, fixed, kept, share=policy is None)
        if room is None:
            error = overflow(fixed + sum(map(message_tokens, kept)), window or 0)
            raise turn_failures.to_application_error(error) from None
        kept = kept if room.keep else []

        def body_for(base_url: str) -> dict[str, Any]:
            return {
                "model": request.response.model,
                "messages": compaction.summariser_messages(messages, room.transcript_tokens, kept),
                converter.max_tokens_parameter(base_url): room.summary_tokens,
            }

        if room.summary_tokens:
            result, message = await self._call_upstream(request, body_for, None, fence)
            summary = compaction.shortened(str(message.get("content") or "").strip(), room.summary_tokens)
            if not summary:
                raise ApplicationError(
                    "the model gave an empty summary when asked to compact the context",
                    type=RetryableUpstreamError.__name__,
                )
        else:  # the newest message leaves no room for one: the earlier ones are left out, and said so
            result, summary = InferenceResult(output=[], finish_reason="stop", usage=Usage()), ""
        content = compaction.CompactionContent(summary=summary, kept=kept)
        item = CompactionItem(
            id=new_id("cmp"), encrypted_content=compaction.seal(content, self.secret_box, request.project)
        )
        result = InferenceResult(output=[item], finish_reason="stop", usage=result.usage, deployment=result.deployment)
        if request.emit_events:
            emitter = EventEmitter(self.events, request.response.id, fence)
            emitter.emit(compaction_events(item, request.output_offset))
            await emitter.close()
        await self.turns.record(
            fence,
            compaction.rendered(item.id or "", content),
            result.model_dump(mode="json"),
            base=ContextBase(),
            announce=self.announce_turns,
        )
        return await self._carried(request, result)

    async def _learned(
        self, request: InferenceInput, deployment: Deployment, model: str, error: ContextWindowExceededError
    ) -> bool:
        """The window a refusal told of is kept; whether the call may be fitted to it and sent
        again (it shrinks to fit, and the window is smaller than the one it was fitted to)."""
        if not error.window:
            return False
        before = await self.windows.of_deployment(deployment, model)
        self.windows.learn(deployment, model, error.window)
        response = request.response
        shrinks = response.truncation == "auto" or response.compaction is not None
        return shrinks and (before is None or error.window < before)

    async def _call_upstream(
        self, request: InferenceInput, body_for: Callable[[str], dict[str, Any]], table: ToolTable | None, fence: Fence
    ) -> tuple[InferenceResult, dict[str, Any]]:
        """The call, to a deployment of the model when its budget gives the call a slot;
        `table` None: a compaction's summary (asked whole, never streamed)."""
        model = request.model_group or request.response.model
        lane: Lane = "background" if request.response.background else "interactive"
        try:
            async with self.gate.slot(
                model, lane, request.project, request.response.id, returning=request.returning
            ) as slot:
                deployment = slot.deployment
                client = self.upstreams.client(deployment)
                body = body_for(client.base_url) | {"model": deployment.upstream_name(model)}
                if request.model_group is not None:
                    metrics.upstream_failover(deployment.id)
                called = time.perf_counter()
                with inference_span(request.response.model, urlsplit(client.base_url).netloc) as span:
                    span.set_attribute("durable_responses.deployment", deployment.id)
                    try:
                        if table is None:
                            result, message = await self._summary(client, body, slot.saw)
                        elif request.emit_events:
                            result, message = await self._streamed(client, request, body, table, fence, slot.saw)
                        else:
                            result, message = await self._whole(client, request, body, table, slot.saw)
                    except ContextWindowExceededError as error:
                        retried = await self._learned(request, deployment, model, error)
                        metrics.inference_failed(
                            request.response.model, time.perf_counter() - called, error, retried=retried
                        )
                        span.set_status(Status(StatusCode.ERROR))
                        if retried:
                            raise RetryableUpstreamError(
                                f"{error.message} (the request is fitted to that window and sent again)"
                            ) from error
                        raise
                    except UpstreamError as error:
                        metrics.inference_failed(
                            request.response.model,
                            time.perf_counter() - called,
                            error,
                            retried=isinstance(error, RetryableUpstreamError),
                        )
                        span.set_status(Status(StatusCode.ERROR))
                        span.set_attribute("error.type", type(error).__name__)
                        raise
                    span.set_attributes(
                        {
                            "gen_ai.usage.input_tokens": result.usage.input_tokens,
                            "gen_ai.usage.output_tokens": result.usage.output_tokens,
                            "gen_ai.response.finish_reasons": [result.finish_reason],
                        }
                    )
                metrics.inference_succeeded(
                    request.response.model,
                    time.perf_counter() - called,
                    result.usage.input_tokens,
                    result.usage.output_tokens,
                )
                slot.succeeded(result.usage.total_tokens or result.usage.input_tokens + result.usage.output_tokens)
        except CapacityWaitError as error:
            raise capacity_wait(error, error.deployment, non_retryable=True, least_seconds=0.001) from error
        except UpstreamError as error:
            raise turn_failures.to_application_error(error, deployment.shown_for(model)) from error
        except TurnLost as error:  # this execution stalled past its lease; another took over
            raise ApplicationError(str(error), type=type(error).__name__) from error
        return result.model_copy(update={"deployment": deployment.id}), message

    async def _whole(
        self,
        client: ChatBackend,
        request: InferenceInput,
        body: dict[str, Any],
        table: ToolTable,
        on_headers: HeadersSeen,
    ) -> tuple[InferenceResult, dict[str, Any]]:
        completion = await client.complete(body, on_headers)
        choices = completion.get("choices") or []
        if not choices:
            raise RetryableUpstreamError("inference backend answered with no choices")
        choice = choices[0]
        message = reply.with_call_ids(reply.present(choice.get("message") or {}))
        output = converter.assistant_to_output(message, table, reply.logprobs(choice), request.sources)
        result = InferenceResult(
            output=sealed_items.with_sealed_reasoning(self.secret_box, request, output),
            finish_reason=reply.finish_reason(choice.get("finish_reason"), message),
            usage=reply.usage(completion.get("usage")),
        )
        return result, message

    async def _summary(
        self, client: ChatBackend, body: dict[str, Any], on_headers: HeadersSeen
    ) -> tuple[InferenceResult, dict[str, Any]]:
        completion = await client.complete(body, on_headers)
        choices = completion.get("choices") or []
        if not choices:
            raise RetryableUpstreamError("inference backend answered with no choices")
        message = reply.present(choices[0].get("message") or {})
        return InferenceResult(output=[], finish_reason="stop", usage=reply.usage(completion.get("usage"))), message

    async def _streamed(
        self,
        client: ChatBackend,
        request: InferenceInput,
        body: dict[str, Any],
        table: ToolTable,
        fence: Fence,
        on_headers: HeadersSeen,
    ) -> tuple[InferenceResult, dict[str, Any]]:
        """Deltas go to the event log as the upstream chunks arrive; history gets only the result."""
        response_id = request.response.id
        earlier = await self.events.item_events(response_id, from_output_index=request.output_offset)
        assembler = StreamAssembler(
            request.output_offset,
            streamed_from_events(earlier),
            table,
            seal=sealed_items.sealer(self.secret_box, request),
            sources=request.sources,
        )
        emitter = EventEmitter(self.events, response_id, fence, pending_deltas=assembler.pending_deltas)
        held = HeldOutput.of(self.moderator, request.response, request.project, lambda: emitter.emit([]))
        if held is not None:
            assembler.ceiling = held.ceiling
        finish_reason: str | None = None
        usage: dict[str, Any] | None = None
        try:
            async with client.stream(body | {"stream_options": {"include_usage": True}}, on_headers) as batches:
                async for batch in batches:
                    for chunk in batch:
                        usage = chunk.get("usage") or usage
                        for choice in chunk.get("choices") or []:
                            finish_reason = choice.get("finish_reason") or finish_reason
                            emitter.emit(assembler.feed(choice.get("delta") or {}, reply.logprobs(choice)))
                    if held is not None:
                        held.offer(assembler.held_items())
                        if held.blocked:
                            break  # the rest of the reply is not read: the stream stops here
            if held is not None:
                await held.finish(assembler.held_items())
                if held.blocked:
                    emitter.emit(assembler.withhold())
            events, output, message = assembler.finish()
            emitter.emit(events)
        finally:
            if held is not None:
                await held.close()
            await emitter.close()
        result = InferenceResult(
            output=output, finish_reason=reply.finish_reason(finish_reason, message), usage=reply.usage(usage)
        )
        if held is not None:
            result = result.model_copy(update={"moderation": held.found(), "blocked": held.blocked})
        return result, message

    async def _carried(self, request: InferenceInput, result: InferenceResult) -> InferenceResult:
        """The result as it travels through history: large items as stubs, their heavy fields
        parked in the store (again, idempotently, for a turn whose result was recorded)."""
        output, parked = history_budget.split(result.output)
        await self.parked.put(request.response.id, parked)
        carried = result.model_copy(update={"output": output, "parked": list(parked)})
        size = history_budget.size_of(carried)
        if size > history_budget.MAX_RESULT_BYTES:
            raise ApplicationError(
                f"The model's reply has {len(output)} output items, too many to keep ({size // 1024} KiB once "
                f"large ones are set aside; at most {history_budget.MAX_RESULT_BYTES // 1024} KiB).",
                type="ReplyTooLarge",
                non_retryable=True,
            )
        return carried

    def _messages(
        self, request: InferenceInput, start: TurnStart, table: ToolTable, tool_results: dict[str, str]
    ) -> TurnMessages:
        """The turn's messages (`chat_completions/turn_messages.py`), its items opened."""
        box = self.secret_box

        def opened(stored: list[dict[str, Any]]) -> list[Any]:
            return [sealed_items.opened(box, item, request.project) for item in converter.parse_items(stored)]

        reads_input = request.turn == 0 or request.from_start
        return turn_messages(
            table,
            conversation=opened(start.conversation),
            known_context=start.context,
            inputs=opened(start.items) if reads_input else None,
            tool_results=tool_results,
            compacted=compaction.renderer(box, request.project),
        )


def _turn_key(request: InferenceInput) -> tuple[str, int]:
    """A turn's call in this process (`SingleFlight`), however it was begun."""
    return request.response.id, request.turn
