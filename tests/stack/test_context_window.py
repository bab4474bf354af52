"""Context windows: a request that cannot fit fails `context_length_exceeded` (refused at
request time when the window is known, failed without a retry when the backend refuses);
`truncation: "auto"` leaves the oldest items out until it fits; `context_management`
compacts the context into a `compaction` item, turn after turn; `/v1/responses/compact` and
`/v1/responses/input_tokens` through the SDK.

The model `window-300` takes 300 tokens (the models file says so, and the scripted backend
refuses anything longer, counting its own way: `tests/scripted_backend.reference_tokens`)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import openai
import pytest
import yaml

from demo.backend import DEMO_BASE_URL
from tests.support.scripted_backend import Reply, ScriptedBackend, reference_tokens
from tests.support.stack import EmptyStore, Stack, empty_store, running_stack
from upstream.registry import ModelRegistry
from upstream.windows import ContextWindows

WINDOW = 300
SMALL = "window-300"


@pytest.fixture(scope="module")
async def window_stack(
    temporal_address: str,
    backend: ScriptedBackend,
    store_kind: str,
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> AsyncIterator[Stack]:
    directory = tmp_path_factory.mktemp(f"window-{store_kind}")
    models = directory / "models.yaml"
    models.write_text(
        yaml.safe_dump(
            {
                "model_list": [
                    {
                        "model_name": SMALL,
                        "litellm_params": {"model": f"openai/{SMALL}", "api_base": backend.base_url},
                        "model_info": {"max_input_tokens": WINDOW},
                    },
                    {"model_name": "*", "litellm_params": {"model": "openai/*", "api_base": backend.base_url}},
                ]
            }
        ),
        encoding="utf-8",
    )
    backend.limit_context(SMALL, WINDOW)
    store = empty_store(store_kind, directory, request)
    async with running_stack(temporal_address, backend, store, models_file=str(models)) as stack:
        yield stack


@pytest.fixture
async def sdk(window_stack: Stack) -> AsyncIterator[openai.AsyncOpenAI]:
    client = window_stack.sdk(timeout=60)
    yield client
    await client.close()


VOCABULARY = "the cat sat on a mat and then ran far away from our big red dog who was not fast".split()


def words(count: int, tag: str = "some") -> str:
    """`count` words of plain prose (a word a token, for any tokenizer), opening with `tag`."""
    return " ".join([tag] + [VOCABULARY[index % len(VOCABULARY)] for index in range(count - 1)])


def tag(turn: int) -> str:
    """A word of letters only that names a turn: turna, turnb, ..., turnba, ..."""
    letters = ""
    while True:
        turn, rest = divmod(turn, 26)
        letters = chr(ord("a") + rest) + letters
        if turn == 0:
            return f"turn{letters}"


def sent_since(backend: ScriptedBackend, earlier: int, model: str = SMALL) -> list[dict]:
    return backend.requests(model)[earlier:]


# ---- overflow ----------------------------------------------------------------------------------


async def test_an_input_past_the_window_is_refused_at_request_time(sdk: openai.AsyncOpenAI, backend: ScriptedBackend):
    earlier = len(backend.requests(SMALL))
    with pytest.raises(openai.BadRequestError) as refused:
        await sdk.responses.create(model=SMALL, input=words(400))
    body = refused.value.body
    assert isinstance(body, dict) and body["code"] == "context_length_exceeded" and body["param"] == "input", body
    assert "300" in body["message"]
    assert sent_since(backend, earlier) == []  # nothing reached the backend


async def test_a_growing_chain_is_refused_once_it_cannot_fit_and_not_long_before(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend
):
    earlier = len(backend.requests(SMALL))
    previous = None
    refused = None
    for turn in range(20):
        try:
            response = await sdk.responses.create(
                model=SMALL, input=words(25, tag(turn)), previous_response_id=previous
            )
        except openai.BadRequestError as error:
            refused = error
            break
        assert response.status == "completed"
        previous = response.id
    assert refused is not None and isinstance(refused.body, dict), "the chain never outgrew the window"
    assert refused.body["code"] == "context_length_exceeded"
    sent = [reference_tokens(body) for body in sent_since(backend, earlier)]
    assert sent and max(sent) <= WINDOW, sent
    assert max(sent) > WINDOW // 2, f"refused too early: the largest request sent took {max(sent)} of {WINDOW}"


async def test_the_backends_refusal_fails_the_response_with_context_length_exceeded_once(
    stack: Stack, backend: ScriptedBackend, model: str
):
    """The window is not known here (the `*` deployment says none): the backend refuses, as
    vLLM does, and the response fails at once with OpenAI's code (Codex reads it to compact)."""
    backend.limit_context(model, 40)
    async with stack.http() as http:
        answer = await http.post("/v1/responses", json={"model": model, "input": words(60)})
        assert answer.status_code == 200, answer.text
        failed = answer.json()
    assert failed["status"] == "failed", failed
    assert failed["error"]["code"] == "context_length_exceeded", failed["error"]
    assert "maximum context length is 40" in failed["error"]["message"]
    assert len(backend.requests(model)) == 1  # never retried: retrying cannot mend it


async def test_a_llama_cpp_refusal_is_context_length_exceeded_too(stack: Stack, backend: ScriptedBackend, model: str):
    backend.script(
        model, [Reply(status=400, error_message="the request exceeds the available context size, try increasing it")]
    )
    async with stack.http() as http:
        failed = (await http.post("/v1/responses", json={"model": model, "input": "hello"})).json()
    assert failed["status"] == "failed" and failed["error"]["code"] == "context_length_exceeded", failed
    assert len(backend.requests(model)) == 1


async def test_with_truncation_auto_a_refusal_teaches_the_window_and_the_retry_fits(
    stack: Stack, backend: ScriptedBackend, model: str
):
    backend.limit_context(model, 120)
    async with stack.sdk(timeout=60) as sdk:
        previous = None
        for turn in range(6):
            response = await sdk.responses.create(
                model=model, input=words(20, tag(turn)), truncation="auto", previous_response_id=previous
            )
            assert response.status == "completed", response.error
            previous = response.id
    sent = backend.requests(model)
    refused = [body for body in sent if reference_tokens(body) > 120]
    assert len(refused) <= 1, "the window was learned from the first refusal"
    assert reference_tokens(sent[-1]) <= 120


# ---- truncation --------------------------------------------------------------------------------


async def test_truncation_auto_keeps_a_long_chain_going_within_the_window(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, window_stack: Stack
):
    earlier = len(backend.requests(SMALL))
    previous = None
    for turn in range(15):
        response = await sdk.responses.create(
            model=SMALL,
            input=words(25, tag(turn)),
            truncation="auto",
            instructions="Answer briefly.",
            previous_response_id=previous,
        )
        assert response.status == "completed", response.error
        assert response.truncation == "auto"
        previous = response.id
    sent = sent_since(backend, earlier)
    assert len(sent) == 15
    assert all(reference_tokens(body) <= WINDOW for body in sent)
    last = sent[-1]["messages"]
    assert last[0] == {"role": "system", "content": "Answer briefly."}  # instructions stay
    assert last[-1]["content"].startswith(tag(14) + " ")  # the newest user message stays
    assert not any(str(message.get("content")).startswith(tag(0) + " ") for message in last)  # the oldest went
    async with window_stack.http() as http:
        shown = (await http.get("/metrics")).text
    assert f'durable_responses_context_steps_total{{model="{SMALL}",step="truncated"}}' in shown


async def test_truncation_never_separates_a_tool_call_from_its_output(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend
):
    earlier = len(backend.requests(SMALL))
    tools = [{"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}}]
    previous = None
    for turn in range(8):
        backend.script(SMALL, [Reply(tool_calls=[("lookup", {})])])
        called = await sdk.responses.create(
            model=SMALL, input=words(15, tag(turn)), tools=tools, truncation="auto", previous_response_id=previous
        )
        call = next(item for item in called.output if item.type == "function_call")
        answered = await sdk.responses.create(
            model=SMALL,
            tools=tools,
            truncation="auto",
            previous_response_id=called.id,
            input=[{"type": "function_call_output", "call_id": call.call_id, "output": words(10, "output")}],
        )
        assert answered.status == "completed", answered.error
        previous = answered.id
    for body in sent_since(backend, earlier):
        assert reference_tokens(body) <= WINDOW
        calls = {c["id"] for m in body["messages"] for c in m.get("tool_calls") or []}
        outputs = {m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"}
        assert calls == outputs, body["messages"]


# ---- compaction --------------------------------------------------------------------------------


async def test_compaction_carries_a_100_turn_chain_within_the_window(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, window_stack: Stack
):
    earlier = len(backend.requests(SMALL))
    previous = None
    compactions = 0
    for turn in range(100):
        response = await sdk.responses.create(
            model=SMALL,
            input=words(12, tag(turn)),
            previous_response_id=previous,
            context_management=[{"type": "compaction", "compact_threshold": 200}],
        )
        assert response.status == "completed", (turn, response.error)
        kinds = [item.type for item in response.output]
        assert kinds[-1] == "message"
        compactions += kinds.count("compaction")
        previous = response.id
    sent = sent_since(backend, earlier)
    assert all(reference_tokens(body) <= WINDOW for body in sent), max(map(reference_tokens, sent))
    assert compactions >= 10, compactions
    summarised = [body for body in sent if body["messages"][0]["content"].startswith("COMPACT THE CONVERSATION")]
    assert len(summarised) == compactions
    # every turn after a compaction starts from the summary, not from the chain's first turns
    last = sent[-1]["messages"]
    assert any(str(m.get("content", "")).startswith("Summary of the conversation so far") for m in last)
    assert not any(str(m.get("content", "")).startswith(tag(0) + " ") for m in last)
    async with window_stack.http() as http:  # the chain's stored context stays small: it starts afresh
        kept = await http.get(f"/v1/responses/{previous}")
    assert kept.status_code == 200


async def test_a_streamed_compaction_shows_its_item(sdk: openai.AsyncOpenAI, backend: ScriptedBackend):
    previous = None
    for turn in range(3):
        done = await sdk.responses.create(model=SMALL, input=words(40, tag(turn)), previous_response_id=previous)
        previous = done.id
    events = []
    async with sdk.responses.stream(
        model=SMALL,
        input="and now?",
        previous_response_id=previous,
        context_management=[{"type": "compaction", "compact_threshold": 100}],
    ) as stream:
        async for event in stream:
            events.append(event)
        final = await stream.get_final_response()
    types = [event.type for event in events]
    assert "response.compaction.compacting" in types
    added = [
        event for event in events if event.type == "response.output_item.added" and event.item.type == "compaction"
    ]
    done = [event for event in events if event.type == "response.output_item.done" and event.item.type == "compaction"]
    assert len(added) == len(done) == 1 and done[0].item.encrypted_content
    assert [item.type for item in final.output] == ["compaction", "message"]
    assert final.output[0].encrypted_content == done[0].item.encrypted_content


async def test_a_conversation_compacts_and_goes_on_from_its_summary(sdk: openai.AsyncOpenAI, backend: ScriptedBackend):
    conversation = await sdk.conversations.create()
    earlier = len(backend.requests(SMALL))
    for turn in range(12):
        response = await sdk.responses.create(
            model=SMALL,
            input=words(20, tag(turn)),
            conversation=conversation.id,
            context_management=[{"type": "compaction", "compact_threshold": 200}],
        )
        assert response.status == "completed", (turn, response.error)
    sent = sent_since(backend, earlier)
    assert all(reference_tokens(body) <= WINDOW for body in sent)
    items = [item async for item in sdk.conversations.items.list(conversation.id, limit=100)]
    assert any(item.type == "compaction" for item in items)
    assert not any(str(m.get("content", "")).startswith(tag(0) + " ") for m in sent[-1]["messages"])


async def compacting_chain(sdk: openai.AsyncOpenAI, backend: ScriptedBackend, *, turns: int, size: int) -> list[dict]:
    """A chain of `turns` turns of `size` words each, compacting past 200 tokens: every turn
    completes, and everything the backend was sent fits the window. Returns what was sent."""
    earlier = len(backend.requests(SMALL))
    previous = None
    for turn in range(turns):
        response = await sdk.responses.create(
            model=SMALL,
            input=words(size, tag(turn)),
            previous_response_id=previous,
            context_management=[{"type": "compaction", "compact_threshold": 200}],
        )
        assert response.status == "completed", (turn, response.error)
        previous = response.id
    sent = sent_since(backend, earlier)
    assert all(reference_tokens(body) <= WINDOW for body in sent), max(map(reference_tokens, sent))
    return sent


async def test_compaction_always_fits_even_when_each_turn_is_a_third_of_the_window(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend
):
    """Turns of ~100 tokens, compaction past 200, a window of 300: whatever the summary, the
    kept message and the new input weigh, what a turn sends after a compaction fits (issue 41:
    this chain failed at turn 10, 328 tokens refused from inside the workflow)."""
    sent = await compacting_chain(sdk, backend, turns=30, size=100)
    summarised = [body for body in sent if body["messages"][0]["content"].startswith("COMPACT THE CONVERSATION")]
    assert len(summarised) >= 5
    for body in summarised:  # each summariser read the turns it summarised, within its window
        assert "[user] turn" in body["messages"][-1]["content"], body["messages"][-1]["content"][:200]


async def test_a_compacted_context_leaves_room_for_the_next_message(sdk: openai.AsyncOpenAI, backend: ScriptedBackend):
    """`/v1/responses/compact` of three ~100-token turns, then its item and one more message of
    the same size: it fits the window (issue 41: 308 tokens were refused)."""
    history = [
        {"role": "user", "content": words(100, "first")},
        {"role": "assistant", "content": words(100, "answer")},
        {"role": "user", "content": words(100, "second")},
    ]
    compacted = await sdk.responses.compact(model=SMALL, input=history)
    earlier = len(backend.requests(SMALL))
    follow = await sdk.responses.create(
        model=SMALL,
        input=[
            *[item.model_dump(exclude_none=True) for item in compacted.output],
            {"role": "user", "content": words(100, "third")},
        ],
    )
    assert follow.status == "completed", follow.error
    sent = sent_since(backend, earlier)[0]["messages"]
    assert "first" in sent[0]["content"] and "answer" in sent[0]["content"]  # the summary holds the turns it stands for
    assert sent[1]["content"].startswith("second")  # and the newest is kept word for word


# ---- the compact and input_tokens endpoints ----------------------------------------------------


async def test_compact_through_the_sdk_and_go_on_from_its_item(sdk: openai.AsyncOpenAI, backend: ScriptedBackend):
    history = [
        {"role": "user", "content": words(30, "early")},
        {"role": "assistant", "content": "noted"},
        {"role": "user", "content": "remember the number 42"},
    ]
    compacted = await sdk.responses.compact(model=SMALL, input=history)
    assert compacted.object == "response.compaction"
    assert [item.type for item in compacted.output] == ["compaction"]
    assert compacted.usage.total_tokens > 0
    earlier = len(backend.requests(SMALL))
    follow = await sdk.responses.create(
        model=SMALL,
        input=[
            *[item.model_dump(exclude_none=True) for item in compacted.output],
            {"role": "user", "content": "what was the number?"},
        ],
    )
    assert follow.status == "completed", follow.error
    messages = sent_since(backend, earlier)[0]["messages"]
    assert messages[0]["content"].startswith("Summary of the conversation so far")
    assert [m["content"] for m in messages[1:]] == ["remember the number 42", "what was the number?"]
    assert not any("early" in str(m["content"]) for m in messages)
    assert all("durable_responses_compaction" not in m for m in messages)  # the marker never goes upstream


async def test_a_compaction_item_not_made_here_is_refused(sdk: openai.AsyncOpenAI):
    with pytest.raises(openai.BadRequestError) as refused:
        await sdk.responses.create(
            model=SMALL,
            input=[{"type": "compaction", "encrypted_content": "dr1.k.forged"}, {"role": "user", "content": "hi"}],
        )
    assert isinstance(refused.value.body, dict)
    assert refused.value.body["code"] == "invalid_encrypted_content"
    assert refused.value.body["param"] == "input[0].encrypted_content"


async def test_input_tokens_counts_what_the_first_turn_would_send(sdk: openai.AsyncOpenAI):
    short = await sdk.responses.input_tokens.count(model=SMALL, input="hello there")
    long = await sdk.responses.input_tokens.count(model=SMALL, input=words(100))
    assert short.object == "response.input_tokens" and 0 < short.input_tokens < long.input_tokens
    first = await sdk.responses.create(model=SMALL, input=words(30))
    chained = await sdk.responses.input_tokens.count(model=SMALL, input="hello there", previous_response_id=first.id)
    assert chained.input_tokens > short.input_tokens + 30
    instructed = await sdk.responses.input_tokens.count(model=SMALL, input="hello there", instructions=words(20))
    assert instructed.input_tokens > short.input_tokens
    with pytest.raises(openai.NotFoundError):
        await sdk.responses.input_tokens.count(model=SMALL, input="x", previous_response_id="resp_nope")
    conversation = await sdk.conversations.create()
    with pytest.raises(openai.BadRequestError) as both:
        await sdk.responses.input_tokens.count(
            model=SMALL, input="x", previous_response_id=first.id, conversation=conversation.id
        )
    assert isinstance(both.value.body, dict) and both.value.body["code"] == "mutually_exclusive_parameters"


# ---- windows from the backend ------------------------------------------------------------------


async def test_a_window_is_read_from_the_backends_model_list_as_vllm_gives_it(backend: ScriptedBackend):
    name = f"listed-{uuid.uuid4().hex[:8]}"
    backend.limit_context(name, 4096, listed=True)
    windows = ContextWindows(ModelRegistry.single(backend.base_url))
    assert await windows.of(name) is None  # the list is fetched beside the request, not in its way
    await windows.refreshed(name)
    assert await windows.of(name) == 4096
    assert await windows.of("scripted-a") is None  # listed without a window: unknown
    deployment = windows.registry.deployments[0]
    windows.learn(deployment, "scripted-a", 1000)
    assert await windows.of("scripted-a") == 1000


async def test_a_compaction_trigger_last_in_input_compacts_and_answers_nothing_else(sdk: openai.AsyncOpenAI):
    compacted = await sdk.responses.create(
        model=SMALL, input=[{"role": "user", "content": words(20)}, {"type": "compaction_trigger"}]
    )
    assert compacted.status == "completed", compacted.error
    assert [item.type for item in compacted.output] == ["compaction"]
    with pytest.raises(openai.BadRequestError) as refused:
        await sdk.responses.create(
            model=SMALL, input=[{"type": "compaction_trigger"}, {"role": "user", "content": "hi"}]
        )
    assert isinstance(refused.value.body, dict) and refused.value.body["param"] == "input[0]"


@pytest.mark.one_store
async def test_the_demo_model_compacts_as_the_docs_show(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore
):
    """`docs/context-windows.md`'s snippet, against the demo model a newcomer starts with."""
    async with running_stack(temporal_address, backend, store, inference_base_url=DEMO_BASE_URL) as demo:
        async with demo.sdk(timeout=60) as sdk:
            previous, shown = None, []
            for text in ["my name is Ada", "I like tea", "what do you know about me?"]:
                response = await sdk.responses.create(
                    model="demo/echo",
                    input=text,
                    previous_response_id=previous,
                    context_management=[{"type": "compaction", "compact_threshold": 40}],
                )
                shown.append(([item.type for item in response.output], response.output_text))
                previous = response.id
    assert any("compaction" in types for types, _ in shown), shown
    assert "my name is Ada" in shown[-1][1], shown


async def test_a_large_compaction_item_travels_parked_and_comes_back_whole(
    stack: Stack, backend: ScriptedBackend, model: str
):
    """A kept message of 3,800 words makes an item past what history carries whole: it is
    parked in the store on the way, and the client gets it whole."""
    long_message = words(3800, "kept")
    async with stack.sdk(timeout=60) as sdk:
        compacted = await sdk.responses.create(
            model=model, input=[{"role": "user", "content": long_message}, {"type": "compaction_trigger"}]
        )
        item = compacted.output[0]
        assert item.type == "compaction" and len(item.encrypted_content) > 16 * 1024
        handle = stack.client.get_workflow_handle(compacted.id)
        await handle.result()  # (the answer came in-process, before the workflow's end reached Temporal)
        history = await handle.fetch_history()
        assert max(event.ByteSize() for event in history.events) < 16 * 1024  # it did not pass through whole
        assert (await sdk.responses.retrieve(compacted.id)).output[0].encrypted_content == item.encrypted_content
        follow = await sdk.responses.create(
            model=model, input=[item.model_dump(exclude_none=True), {"role": "user", "content": "and?"}]
        )
    assert follow.status == "completed"
    assert [m["content"] for m in backend.requests(model)[-1]["messages"]][1:] == [long_message, "and?"]


# ---- issue 61: compaction at the window's edge ---------------------------------------------------


async def test_a_chain_whose_newest_message_takes_most_of_the_window_still_compacts(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend
):
    """Turns of ~250 tokens, compaction past 200, a window of 300: the newest message fits the
    window alone, so no turn is refused; the summary shrinks to what is left beside it (turn 2
    failed: about 303 tokens, the kept message, the summary's header and its text)."""
    sent = await compacting_chain(sdk, backend, turns=4, size=250)
    answered = [body for body in sent if not body["messages"][0]["content"].startswith("COMPACT THE CONVERSATION")]
    assert answered[-1]["messages"][-1]["content"].startswith(tag(3))  # the newest, word for word


async def test_a_compaction_of_turns_half_the_window_each_leaves_room_for_a_message(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend
):
    """`/v1/responses/compact` over three ~250-token turns: its item must leave room for what
    follows, so a kept message larger than half the window is summarised too (its item counted
    ~290 tokens, and the item plus a one-line message was refused at 333)."""
    history = [
        {"role": "user", "content": words(250, "first")},
        {"role": "assistant", "content": words(250, "answer")},
        {"role": "user", "content": words(250, "second")},
    ]
    compacted = await sdk.responses.compact(model=SMALL, input=history)
    earlier = len(backend.requests(SMALL))
    follow = await sdk.responses.create(
        model=SMALL,
        input=[
            *[item.model_dump(exclude_none=True) for item in compacted.output],
            {"role": "user", "content": "and now, one more line"},
        ],
    )
    assert follow.status == "completed", follow.error
    sent = sent_since(backend, earlier)[0]
    assert reference_tokens(sent) <= WINDOW
    assert sent["messages"][0]["content"].startswith("Summary of the conversation so far")
    assert sent["messages"][-1]["content"] == "and now, one more line"
