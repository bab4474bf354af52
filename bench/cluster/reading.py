"""The bed's final reading: once every fault is healed, what became of each response the
client was told was made (read until it ends), of each conversation and of each accepted
steer, as the checker (`bench/cluster/checker.py`) reads them."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx
import openai
from openai.types.responses import Response

from bench.cluster.history import ConversationRead, Final, Operation, SteerRead, now
from bench.cluster.workload import TERMINAL, Client, decide, steer_text

FINAL_SECONDS = 180.0
"""How long, once healed, every response has to reach a terminal status."""


def waiting_for_approval(response: Response) -> str | None:
    """The approval request a background response waits for, if it does."""
    if response.status == "in_progress" and response.output and response.output[-1].type == "mcp_approval_request":
        return response.output[-1].id
    return None


async def settle(client: Client, response_ids: list[str], deadline: float, rejected: set[str]) -> dict[str, Response]:
    """Each response read over and over, in rounds, until it ends or the time is up. One left
    waiting for approval (its operation gave up first) is refused its call: it ends, and the
    call never runs."""
    ended: dict[str, Response] = {}
    pending = list(dict.fromkeys(response_ids))
    looking = asyncio.Semaphore(8)
    refusals = Operation(id="final", kind="approval", start=now())

    async def look(response_id: str) -> None:
        async with looking:
            try:
                response = await client.sdks[client.rng.choice(client.apis)].responses.retrieve(response_id)
            except openai.APIError:
                return
            if response.status in TERMINAL:
                ended[response_id] = response
            elif (request := waiting_for_approval(response)) is not None:
                refusals.start = now()
                with contextlib.suppress(TimeoutError, openai.APIError):
                    await decide(client, refusals, response_id, request, approve=False)
                    rejected.add(response_id)  # answered: it waited, so no approval had reached it

    while pending and now() < deadline:
        await asyncio.gather(*(look(response_id) for response_id in pending))
        pending = [response_id for response_id in pending if response_id not in ended]
        if pending:
            await asyncio.sleep(1)
    return ended


async def final(client: Client, response_id: str, stored: Response | None, rejected: bool) -> Final:
    """The response once healed: its end, and its event log against what is stored."""
    if stored is None:
        return Final(response_id=response_id, status=None, rejected_at_end=rejected)
    record = Final(
        response_id=response_id,
        rejected_at_end=rejected,
        status=stored.status,
        output_text=stored.output_text,
        approval_requests=[item.id for item in stored.output if item.type == "mcp_approval_request"],
        tool_calls=[str(getattr(item, "status", None) or "") for item in stored.output if item.type == "mcp_call"],
        command_outputs=[
            f"{item.status} {each.outcome.type} {getattr(each.outcome, 'exit_code', '')}: {each.stdout.strip()}"
            for item in stored.output
            if item.type == "shell_call_output"
            for each in item.output
        ]
        + [
            f"{item.status} logs: {each.logs.strip()}"
            for item in stored.output
            if item.type == "code_interpreter_call"
            for each in item.outputs or []
            if each.type == "logs"
        ],
    )
    sdk = client.sdks[client.rng.choice(client.apis)]
    try:
        events = [event async for event in await sdk.responses.retrieve(response_id, stream=True)]
    except openai.APIError as error:
        record.note = f"its log could not be read: {str(error)[:200]}"
        return record
    numbers = [event.sequence_number for event in events]
    record.log_gaps = numbers != list(range(len(numbers)))
    last = events[-1] if events else None
    ended = getattr(last, "response", None)
    record.log_matches = ended is not None and ended.model_dump() == stored.model_dump()
    return record


def _text(item: Any) -> str:
    """An input or conversation item's text, its parts joined."""
    return "".join(getattr(part, "text", "") for part in getattr(item, "content", None) or [])


async def steer_read(client: Client, operation: Operation, deadline: float) -> SteerRead:
    """The successors of a response steered with an accepted steer (each once it ended), and
    how many of them took the steer as input."""
    record = SteerRead(operation_id=operation.id, steered_id=operation.steered_id)
    sdk = client.sdks[client.rng.choice(client.apis)]
    try:
        listed = await sdk.get(
            "/responses",
            cast_to=httpx.Response,
            options={"params": {"previous_response_id": operation.steered_id, "limit": 100}},
        )
        record.successors = [each["id"] for each in listed.json()["data"]]
        ended = await settle(client, record.successors, deadline, set())
        record.statuses = [ended[each].status if each in ended else None for each in record.successors]
        for successor in record.successors:
            texts = [_text(item) async for item in sdk.responses.input_items.list(successor)]
            record.carrying += steer_text(operation.id) in texts
    except (openai.APIError, ValueError, KeyError) as error:
        record.note = f"its successors could not be read: {str(error)[:200]}"
    return record


async def conversation_read(client: Client, conversation_id: str, operation_id: str) -> ConversationRead:
    """A conversation's items as stored once healed, oldest first."""
    record = ConversationRead(conversation_id=conversation_id, operation_id=operation_id)
    sdk = client.sdks[client.rng.choice(client.apis)]
    try:
        async for item in sdk.conversations.items.list(conversation_id, order="asc", limit=100):
            record.items.append(f"{getattr(item, 'role', item.type)}: {_text(item)}")
            record.item_ids.append(str(item.id))
    except openai.APIError as error:
        record.note = f"its items could not be read: {str(error)[:200]}"
    return record
