"""The bed's workload: the operations its client runs against the API nodes while the
nemesis acts (`bench/cluster/client.py` runs them; `bench/cluster/reading.py` reads what
became of them once healed).

Operations, each on an API node picked at random for each call:
- `text`: a background response, polled to its end;
- `stream`: a background response streamed to its end; a stream the network cut is resumed
  after its last event (`starting_after`) on any API node;
- `moderated`: a stream as `stream`, of output moderated under `block`, whose last window is
  flagged;
- `approval`: a background response whose model calls the destructive `write_note` through
  the bed's MCP server with approval required; once it waits, approved
  (`POST /v1/responses/{id}/approvals`), polled to its end;
- `chain`: two responses, the second continuing the first;
- `conversation`: a conversation, and two responses in it, one after the other;
- `steer`: over a WebSocket, a response steered while its tool runs;
- `command`: a background response whose model runs a shell command in one of a few
  containers the workload made (placed on the workers' hosts);
- `code`: the same with Python, in the container's `code_interpreter`.

A refusal (429, 503 with `retry-after`) is retried after a pause; every answer, and every
call that got none, is logged."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import httpx
import openai
from openai.types.responses import Response

from bench.cluster.history import Answer, Log, Operation, now

TERMINAL = {"completed", "failed", "incomplete", "cancelled"}
CALL_SECONDS = 15.0
OPERATION_SECONDS = 120.0
"""An operation gives up (its responses are still read at the end) after this long."""


class Client:
    def __init__(self, apis: list[str], tools_url: str, rng: random.Random) -> None:
        self.apis = apis
        self.tools_url = tools_url
        self.rng = rng
        self.containers: list[str] = []
        self.sdks = {
            api: openai.AsyncOpenAI(base_url=f"{api}/v1", api_key="bed", max_retries=0, timeout=CALL_SECONDS)
            for api in apis
        }

    async def call(self, operation: Operation, name: str, act: Any) -> Any:
        """`act(sdk)` on a random API node, retried past refusals and lost answers until the
        operation's time is up; each try logged. Raises TimeoutError when it is up."""
        while now() - operation.start < OPERATION_SECONDS:
            api = self.rng.choice(self.apis)
            try:
                result = await act(self.sdks[api])
            except openai.APIStatusError as error:
                operation.answers.append(
                    Answer(
                        api=api,
                        call=name,
                        status=error.status_code,
                        retry_after=error.response.headers.get("retry-after"),
                        error=str(error)[:200],
                    )
                )
                if error.status_code not in (408, 429, 502, 503, 504):
                    raise
            except (openai.APIConnectionError, openai.APITimeoutError) as error:
                operation.answers.append(Answer(api=api, call=name, error=type(error).__name__))
            else:
                operation.answers.append(Answer(api=api, call=name, status=200))
                return result
            await asyncio.sleep(0.5 + self.rng.random())
        raise TimeoutError(name)

    async def create(self, operation: Operation, **body: Any) -> Response:
        """A response made: a create that got no answer may have made one that the client will
        never know of (logged as unknown); one that did is remembered."""
        response: Response = await self.call(operation, "create", lambda sdk: sdk.responses.create(**body))
        operation.response_ids.append(response.id)
        return response

    async def ended(self, operation: Operation, response_id: str, until: Any = None) -> Response:
        while True:
            response: Response = await self.call(operation, "retrieve", lambda sdk: sdk.responses.retrieve(response_id))
            if response.status in TERMINAL or (until is not None and until(response)):
                return response
            await asyncio.sleep(0.3)

    def tools(self, approval: str = "always") -> list[Any]:
        return [
            {"type": "mcp", "server_label": "bed", "server_url": f"{self.tools_url}/mcp", "require_approval": approval}
        ]


async def run_text(client: Client, operation: Operation) -> None:
    said = f"hello {operation.id}"
    operation.expected_text = f"echo: {said}"
    created = await client.create(operation, model="echo", input=said, background=True)
    await client.ended(operation, created.id)


STREAM_ENDS = {"response.completed", "response.failed", "response.incomplete", "response.cancelled"}

MODERATION = {"model": "omni-moderation-latest", "policy": {"output": {"mode": "block"}}}
"""A `moderated` operation's: its output is held back, window by window, until checked."""

CALM = " ".join(f"Sentence {number} of this reply is calm and says nothing at all." for number in range(1, 6))
"""Over one moderation window of text (`MODERATION_WINDOW_CHARS`) that passes."""

FLAGGED = "Then it says to kill the process."
"""A last sentence the demo's classifier flags (violence): its window must never be sent."""


async def run_stream(client: Client, operation: Operation) -> None:
    said = f"stream {operation.id}. {CALM}"  # streamed for about 4 s
    operation.expected_text = f"echo: {said}"
    await stream(client, operation, model="drip", input=said)


async def run_moderated(client: Client, operation: Operation) -> None:
    """A stream whose output is moderated: calm windows, then a flagged one, which must never
    reach the client, whatever breaks the stream and on whichever API node it resumes."""
    await stream(
        client,
        operation,
        model="drip",
        input=f"moderated {operation.id}. {CALM} {FLAGGED}",
        extra_body={"moderation": MODERATION},
    )


async def stream(client: Client, operation: Operation, **body: Any) -> None:
    """A background response streamed on one API node; when the stream breaks, resumed after
    the last event it got (`starting_after`) on any node, until its end; then read to its end.
    Every event's sequence number and every text delta is noted."""
    api = client.rng.choice(client.apis)
    opened = client.sdks[api].responses.create(background=True, stream=True, **body)
    if not await _streamed(operation, api, "stream", opened) or not operation.response_ids:
        return  # refused, or cut before it said which response it made: nothing to resume
    while not operation.stream_ended and now() - operation.start < OPERATION_SECONDS:
        await asyncio.sleep(0.5 + client.rng.random())
        api = client.rng.choice(client.apis)
        after = operation.sequence_numbers[-1] if operation.sequence_numbers else -1
        resumed = client.sdks[api].responses.retrieve(operation.response_ids[0], stream=True, starting_after=after)
        if not await _streamed(operation, api, "resume", resumed):
            break  # nothing more will come: read what it ended as
    await client.ended(operation, operation.response_ids[0])


async def _streamed(operation: Operation, api: str, call: str, opening: Any) -> bool:
    """The events of one connection, read until its end or until it breaks, and the answer
    logged. False when trying again cannot help: a refusal other than 408/429/5xx, or the
    server saying the stream ended without its last event."""
    try:
        await _read_events(operation, await opening)
    except openai.APIStatusError as error:
        retry_after = error.response.headers.get("retry-after")
        operation.answers.append(Answer(api=api, call=call, status=error.status_code, retry_after=retry_after))
        return error.status_code in (408, 429) or error.status_code >= 500
    except openai.APIError as error:  # an `error` event in the stream
        operation.answers.append(Answer(api=api, call=call, error=f"{type(error).__name__}: {error}"[:200]))
        return error.code != "stream_ended"
    except Exception as error:  # noqa: BLE001 - a connection the network broke ends how it ends
        operation.answers.append(Answer(api=api, call=call, error=f"{type(error).__name__}: {error}"[:200]))
        return True
    operation.answers.append(Answer(api=api, call=call, status=200))
    return True


async def _read_events(operation: Operation, events: Any) -> None:
    async for event in events:
        operation.sequence_numbers.append(event.sequence_number)
        if event.type == "response.created" and not operation.response_ids:
            operation.response_ids.append(event.response.id)
        elif event.type == "response.output_text.delta":
            operation.streamed_text += event.delta
        elif event.type in STREAM_ENDS:
            operation.stream_ended = True
            return


async def run_approval(client: Client, operation: Operation) -> None:
    arguments = {"key": operation.id, "text": f"note {operation.id}"}
    created = await client.create(
        operation, model="calls/write_note", input=json.dumps(arguments), tools=client.tools(), background=True
    )
    waiting = await client.ended(
        operation, created.id, until=lambda r: any(item.type == "mcp_approval_request" for item in r.output)
    )
    requests = [item for item in waiting.output if item.type == "mcp_approval_request"]
    if not requests:
        operation.note = f"ended {waiting.status} without asking for approval"
        return
    operation.approved_key = operation.id
    operation.expected_text = f"done: wrote {operation.id}"
    await decide(client, operation, created.id, requests[0].id, approve=True)
    await client.ended(operation, created.id)


async def decide(client: Client, operation: Operation, response_id: str, request_id: str, *, approve: bool) -> None:
    """An approval the background response waits for, decided (`POST .../approvals`)."""
    body = {"approval_request_id": request_id, "approve": approve}
    await client.call(
        operation,
        "approve" if approve else "reject",
        lambda sdk: sdk.post(f"/responses/{response_id}/approvals", body=body, cast_to=httpx.Response),
    )


async def run_chain(client: Client, operation: Operation) -> None:
    first = await client.create(operation, model="echo", input=f"first {operation.id}", background=True)
    await client.ended(operation, first.id)
    said = f"second {operation.id}"
    operation.expected_text = f"echo: {said}"
    second = await client.create(operation, model="echo", input=said, previous_response_id=first.id, background=True)
    await client.ended(operation, second.id)


async def run_conversation(client: Client, operation: Operation) -> None:
    """A conversation made, then two responses in it, one after the other."""
    made = await client.call(operation, "conversation", lambda sdk: sdk.conversations.create())
    operation.conversation_id = made.id
    for turn in ("first", "second"):
        said = f"{turn} {operation.id}"
        operation.expected_text = f"echo: {said}"
        created = await client.create(operation, model="echo", input=said, conversation=made.id, background=True)
        await client.ended(operation, created.id)


def steer_text(operation_id: str) -> str:
    """What a `steer` operation steers with: its successor's input, found by it at the end."""
    return f"steer {operation_id}"


STEER_ENDS = {"response.completed", "response.failed", "response.incomplete", "response.cancelled", "error"}


async def run_steer(client: Client, operation: Operation) -> None:
    """Over a WebSocket: a response that runs the read-only `wait` tool, steered while the
    tool runs. A steer the server accepted must be committed once: in a successor that
    continues the steered response (read back at the end, whatever happened to the
    connection)."""
    api = client.rng.choice(client.apis)
    try:
        async with asyncio.timeout(OPERATION_SECONDS):
            async with client.sdks[api].responses.connect() as connection:
                await connection.response.create(
                    model="calls/wait", input=json.dumps({"seconds": 2}), tools=client.tools("never")
                )
                async for event in connection:
                    if event.type == "response.created":
                        operation.response_ids.append(event.response.id)  # the steered one first
                    elif event.type == "response.mcp_call.in_progress" and not operation.steered_id:
                        operation.steered_id = operation.response_ids[0]
                        await connection.response.steer(
                            previous_response_id=operation.steered_id, input=steer_text(operation.id)
                        )
                    elif event.type == "response.steer.accepted":
                        operation.steer_accepted = True
                    elif event.type == "response.steer.failed":
                        operation.note = f"steer failed: {event.error.code}"
                    elif event.type == "error":
                        operation.note = f"error event: {str(event.error)[:200]}"
                        break
                    ended = getattr(event, "response", None) if event.type in STEER_ENDS else None
                    if ended is not None and (ended.id != operation.response_ids[0] or not operation.steer_accepted):
                        break  # the successor's end, or the steered response's with no steer taken
        operation.answers.append(Answer(api=api, call="websocket", status=200))
    except Exception as error:  # noqa: BLE001 - a connection the network broke ends how it ends
        operation.answers.append(Answer(api=api, call="websocket", error=f"{type(error).__name__}: {error}"[:200]))


RUNS_FILE = "/mnt/data/runs"
"""Where a command notes each of its runs, in its own container (the bed counts them on every
host's disk, a lost host's too)."""


CONTAINERS = 6
"""The workload's containers at any time: commands share them, as a coding agent's do."""


async def run_command(client: Client, operation: Operation) -> None:
    """A shell command in one of the workload's containers: it notes its run in the
    container, then says it ran."""
    command = f"echo {operation.id} >> {RUNS_FILE} && echo ran {operation.id}"
    await in_container(
        client,
        operation,
        "calls/shell",
        {"commands": [command]},
        lambda container_id: {
            "type": "shell",
            "environment": {"type": "container_reference", "container_id": container_id},
        },
    )


async def run_code(client: Client, operation: Operation) -> None:
    """Python in one of the workload's containers' `code_interpreter`: it notes its run in the
    container, then says it ran."""
    source = f"open({RUNS_FILE!r}, 'a').write('{operation.id}\\n')\nprint('ran {operation.id}')"
    await in_container(
        client,
        operation,
        "calls/code_interpreter",
        {"code": source},
        lambda container_id: {"type": "code_interpreter", "container": container_id},
        include=["code_interpreter_call.outputs"],  # its logs, which say it ran
    )


async def in_container(
    client: Client, operation: Operation, model: str, arguments: dict[str, Any], tool: Any, **body: Any
) -> None:
    """A background response whose model calls `tool(container_id)` with `arguments`, in one
    of the workload's containers, on whichever worker's host that was placed. A container that
    is gone (its host was lost) is replaced by a new one."""
    if len(client.containers) < CONTAINERS:
        made = await client.call(operation, "container", lambda sdk: sdk.containers.create(name=operation.id))
        client.containers.append(made.id)
    container_id = client.rng.choice(client.containers)
    try:
        created = await client.create(
            operation, model=model, input=json.dumps(arguments), tools=[tool(container_id)], background=True, **body
        )
    except openai.APIStatusError as error:
        if error.status_code < 500 and container_id in client.containers:
            client.containers.remove(container_id)  # gone with its host (or expired)
        raise
    ended = await client.ended(operation, created.id)
    if ended.status != "completed" and container_id in client.containers:
        client.containers.remove(container_id)


RUNS = {
    "text": run_text,
    "stream": run_stream,
    "moderated": run_moderated,
    "approval": run_approval,
    "chain": run_chain,
    "conversation": run_conversation,
    "command": run_command,
    "code": run_code,
    "steer": run_steer,
}


async def run_one(client: Client, operation: Operation, log: Log) -> None:
    try:
        await RUNS[operation.kind](client, operation)
        operation.outcome = "done"
    except TimeoutError:
        operation.outcome = "given_up"
    except openai.APIStatusError as error:
        operation.outcome = "refused"
        operation.note = f"{error.status_code}: {str(error)[:200]}"
    operation.end = now()
    log.write(operation)
