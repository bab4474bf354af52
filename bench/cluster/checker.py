"""The checker: reads the whole history of a run and names every property that failed, with
the operations it concerns and the faults around them. Properties:

- `terminal`: every response the client was told was made reached a terminal status;
- `log_matches`: a stored response equals its event log's last event, and the log's sequence
  numbers run without a gap or a repeat;
- `unique_ids`: no response id was handed out twice;
- `answer`: a completed operation's last response says what its model said (or, for a tool
  call cut off mid-way, that its outcome is unknown);
- `at_most_once`: the destructive tool ran at most once for each approved call, and a command
  or a code call at most once for its call (as its container noted its runs, on whichever host's disk);
- `approved_only`: the destructive tool never ran for a call nobody approved (or one whose
  approval never reached its response, which was refused once healed);
- `side_effect_seen`: a response that reports the tool's result had its call reach the tool;
  one that reports its command or code ran had it noted in its container;
- `conversation_intact`: a conversation holds each completed response's turn whole, once and
  in order, and no answer without its input;
- `stream_whole`: a stream, over every connection it took (resumed on any API node), had each
  event once and in order (sequence numbers 0, 1, 2, ... with no gap and no repeat), and
  its text deltas, joined, are the text its response kept;
- `moderation_held`: a moderated stream never sent a flagged window (none of its deltas, nor
  its kept text, holds a word the classifier flags), and never completed;
- `steer_committed`: a steer the server accepted is the input of exactly one successor of the
  response it steered, and that successor ended;
- `webhook_delivered`: every response's end was delivered to the webhook receiver at least
  once, and always with the same `webhook-id`;
- `budget_kept`: the backend never saw a budgeted model's requests come faster than its
  budget (`rpm`) allows, beyond its burst: in any `BUDGET_WINDOW_SECONDS`, at most the budget's share of
  that time and `BUDGET_BURST_SECONDS` more (the slots a call may take ahead of time, which a
  paused process may hold and use late, all at once), across every partition and pause;
- `no_500`: no answer was a 5xx other than a 503, and every 503 said when to retry."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from bench.cluster.history import (
    ConversationRead,
    Delivery,
    Fault,
    Final,
    Operation,
    SteerRead,
    ToolCall,
    UpstreamCall,
)
from demo.keyword_moderation import found_in
from upstream.pacing import INTERACTIVE_HORIZON

AROUND_SECONDS = 10.0
BACKGROUND_KINDS = {"text", "stream", "moderated", "approval", "chain", "conversation", "command", "code"}
"""The operations whose responses are background ones, which send webhooks (a WebSocket
connection's are not)."""
SANDBOXED_KINDS = {"command", "code"}
STREAMED_KINDS = {"stream", "moderated"}
BUDGET_WINDOW_SECONDS = 10.0
BUDGET_BURST_SECONDS = INTERACTIVE_HORIZON + 1.0
"""The most a call may take its slot ahead and then wait for it (`INTERACTIVE_HORIZON`; a
background call, as all of the bed's budgeted ones are, takes less), and one more second for
what the network delays."""


def _said_unknown(text: str) -> bool:
    """The tool's answer is that its call's outcome is unknown (an attempt sent it, and was cut
    off before the answer): what the server must say rather than send it again."""
    return text.startswith("done: Error: The outcome of ") and " is unknown: " in text


def check(
    operations: list[Operation],
    finals: list[Final],
    tool_calls: list[ToolCall],
    faults: list[Fault],
    command_runs: Counter[str] | None = None,
    conversations: list[ConversationRead] | None = None,
    deliveries: list[Delivery] | None = None,
    steers: list[SteerRead] | None = None,
    upstream: list[UpstreamCall] | None = None,
    budgets: dict[str, float] | None = None,
) -> list[dict[str, Any]]:
    """`command_runs`: how often each command operation's command ran, as the containers on
    every host's disk (a lost host's too) noted it; `conversations`: each conversation the
    workload made, as read at the end; `deliveries`: every webhook delivery the receiver got
    (None: webhooks were not watched); `steers`: what became of each accepted steer;
    `upstream`: every request the backend saw, held to `budgets` (each model's `rpm`)."""
    command_runs = command_runs or Counter()
    violations: list[dict[str, Any]] = []
    ended = [fault for fault in faults if fault.end]

    def violated(name: str, operation: Operation | None, detail: str) -> None:
        around = []
        if operation is not None:
            end = operation.end or operation.start + 600
            around = [
                f"{fault.kind} {'/'.join(fault.targets)} {fault.detail}".strip()
                for fault in ended
                if fault.start <= end + AROUND_SECONDS and fault.end >= operation.start - AROUND_SECONDS
            ]
        violations.append(
            {
                "property": name,
                "operations": [operation.id] if operation else [],
                "detail": detail,
                "faults": around,
            }
        )

    final_of = {final.response_id: final for final in finals}
    owner: dict[str, Operation] = {}
    for operation in operations:
        for response_id in operation.response_ids:
            if response_id in owner:
                violated("unique_ids", operation, f"{response_id} was also handed to {owner[response_id].id}")
            owner[response_id] = operation
            final = final_of.get(response_id)
            if final is None or final.status is None:
                violated("terminal", operation, f"{response_id} never reached a terminal status")
                continue
            if final.log_matches is False or final.log_gaps:
                violated("log_matches", operation, f"{response_id}: stored != its log's end, or the log has a gap")
        last = final_of.get(operation.response_ids[-1]) if operation.response_ids else None
        if operation.expected_text and last is not None and last.status == "completed":
            if last.output_text != operation.expected_text and not _said_unknown(last.output_text):
                violated("answer", operation, f"said {last.output_text!r}, not {operation.expected_text!r}")
        for answer in operation.answers:
            if answer.status is not None and answer.status >= 500 and answer.status != 503:
                violated("no_500", operation, f"{answer.call} on {answer.api}: {answer.status} {answer.error}")
            if answer.status == 503 and not answer.retry_after:
                violated("no_500", operation, f"{answer.call} on {answer.api}: 503 without retry-after")
        if operation.kind in STREAMED_KINDS:
            for problem in _broken_stream(operation, last):
                violated("stream_whole", operation, problem)
        if operation.kind == "moderated":
            for problem in _unheld(operation, last):
                violated("moderation_held", operation, problem)
        if operation.kind in SANDBOXED_KINDS:
            if command_runs[operation.id] > 1:
                violated("at_most_once", operation, f"the {operation.kind} ran {command_runs[operation.id]}x")
            ran = f"exit 0: ran {operation.id}" if operation.kind == "command" else f"logs: ran {operation.id}"
            said_ran = last is not None and any(said.endswith(ran) for said in last.command_outputs)
            if said_ran and command_runs[operation.id] == 0:
                violated("side_effect_seen", operation, "the response reports a run its container never noted")

    if deliveries is not None:
        ids = delivered(deliveries)
        for operation in operations:
            if operation.kind not in BACKGROUND_KINDS:
                continue
            for response_id in operation.response_ids:
                final = final_of.get(response_id)
                if final is None or final.status is None:
                    continue
                given = ids.get((response_id, f"response.{final.status}"), set())
                if not given:
                    violated("webhook_delivered", operation, f"{response_id}: its response.{final.status} never came")
                elif len(given) > 1:
                    violated("webhook_delivered", operation, f"{response_id}: one event came with {len(given)} ids")

    by_id = {operation.id: operation for operation in operations}
    for conversation in conversations or []:
        made = by_id.get(conversation.operation_id)
        if made is None or conversation.note:
            continue
        completed = [
            final_of[response_id].output_text.removeprefix("echo: ")
            for response_id in made.response_ids
            if response_id in final_of and final_of[response_id].status == "completed"
        ]
        for problem in _broken_turns(conversation, completed):
            violated("conversation_intact", made, f"{conversation.conversation_id}: {problem}")

    read_steers = {read.operation_id: read for read in steers or []}
    for operation in operations:
        if not operation.steer_accepted:
            continue
        read = read_steers.get(operation.id)
        if read is None or read.note:
            continue  # it could not be read: nothing is known
        if read.carrying != 1:
            violated("steer_committed", operation, f"the accepted steer is in {read.carrying} successors")
        for successor, status in zip(read.successors, read.statuses, strict=True):
            if status is None:
                violated("terminal", operation, f"{successor} (a steer's successor) never reached a terminal status")

    if upstream is not None and budgets:
        for model, (at, count, allowed) in over_budget(upstream, budgets).items():
            violated(
                "budget_kept",
                None,
                f"{model}: {count} requests in the {BUDGET_WINDOW_SECONDS:g} s from {at:.1f}, past {allowed:g}",
            )

    writes: Counter[str] = Counter()
    for call in tool_calls:
        if call.tool == "write_note":
            writes[str(call.arguments.get("key"))] += 1
    approved = {operation.approved_key: operation for operation in operations if operation.approved_key}
    refused = {
        operation.approved_key
        for operation in approved.values()
        if any(
            final_of[response_id].rejected_at_end for response_id in operation.response_ids if response_id in final_of
        )
    }
    for key, count in writes.items():
        if key not in approved or key in refused:
            violated("approved_only", by_id.get(key), f"write_note ran {count}x for {key}, never approved")
        elif count > 1:
            violated("at_most_once", approved[key], f"write_note ran {count}x for {key}")
    for key, operation in approved.items():
        last = final_of.get(operation.response_ids[-1]) if operation.response_ids else None
        if last is not None and last.output_text == f"done: wrote {key}" and writes[key] == 0:
            violated("side_effect_seen", operation, f"{key}: the response reports a write the tool never saw")
    return violations


def _broken_stream(operation: Operation, last: Final | None) -> list[str]:
    """What is wrong with a stream as its client got it: an event missing or repeated, or text
    that is not what its response kept."""
    problems = []
    numbers = operation.sequence_numbers
    if numbers != list(range(len(numbers))):
        skipped = next(index for index, number in enumerate(numbers) if number != index)
        problems.append(f"sequence numbers {numbers[max(0, skipped - 2) : skipped + 3]} at event {skipped}")
    if last is not None and last.status in ("completed", "incomplete"):
        whole = operation.stream_ended
        if (
            (operation.streamed_text != last.output_text)
            if whole
            else not last.output_text.startswith(operation.streamed_text)
        ):
            problems.append(f"streamed {operation.streamed_text!r}, kept {last.output_text!r}")
    return problems


def _unheld(operation: Operation, last: Final | None) -> list[str]:
    """What a moderated stream let through: a flagged word sent or kept, or a completed end."""
    problems = []
    if found_in(operation.streamed_text):
        problems.append(f"sent a flagged window: {operation.streamed_text[-120:]!r}")
    if last is not None and (found_in(last.output_text) or last.status == "completed"):
        problems.append(f"{last.response_id} ended {last.status}, keeping {last.output_text[-120:]!r}")
    return problems


def busiest(upstream: list[UpstreamCall]) -> dict[str, tuple[float, int]]:
    """Each model name's busiest `BUDGET_WINDOW_SECONDS` at the backend: where it began, and how
    many requests it saw."""
    times: dict[str, list[float]] = defaultdict(list)
    for call in upstream:
        times[call.model].append(call.time)
    most: dict[str, tuple[float, int]] = {}
    for model, arrivals in times.items():
        arrivals.sort()
        first = 0
        for last, at in enumerate(arrivals):
            while at - arrivals[first] >= BUDGET_WINDOW_SECONDS:
                first += 1
            if last - first + 1 > most.get(model, (0.0, 0))[1]:
                most[model] = (arrivals[first], last - first + 1)
    return most


def over_budget(upstream: list[UpstreamCall], budgets: dict[str, float]) -> dict[str, tuple[float, int, float]]:
    """The model names whose busiest window at the backend held more than their `rpm` allows in
    it and its burst: where, how many, and how many were allowed."""
    over = {}
    for model, (at, count) in busiest(upstream).items():
        if model in budgets:
            allowed = budgets[model] / 60 * (BUDGET_WINDOW_SECONDS + BUDGET_BURST_SECONDS)
            if count > allowed:
                over[model] = (at, count, allowed)
    return over


def delivered(deliveries: list[Delivery]) -> dict[tuple[str, str], set[str]]:
    """The `webhook-id`s each (response, event type) was delivered with."""
    ids: dict[tuple[str, str], set[str]] = defaultdict(set)
    for delivery in deliveries:
        ids[(delivery.response_id, delivery.type)].add(delivery.id)
    return ids


def _broken_turns(conversation: ConversationRead, completed: list[str]) -> list[str]:
    """What is wrong with a conversation's items, given what each of its completed responses
    was told (in order): every such turn there whole (its input, then its answer) and in
    order; no item twice; no answer without its input just before it."""
    problems = []
    if len(set(conversation.item_ids)) != len(conversation.item_ids):
        problems.append("an item appears twice")
    items = conversation.items
    for index, item in enumerate(items):
        if item.startswith("assistant: echo: "):
            said = item.removeprefix("assistant: echo: ")
            if index == 0 or items[index - 1] != f"user: {said}":
                problems.append(f"the answer to {said!r} follows no input of it")
    places = []
    for said in completed:
        turn = [f"user: {said}", f"assistant: echo: {said}"]
        found = [index for index in range(len(items) - 1) if items[index : index + 2] == turn]
        if not found:
            problems.append(f"the completed turn {said!r} is missing")
        else:
            places.append(found[0])
    if places != sorted(places):
        problems.append("its turns are out of order")
    return problems
