"""Bad input gets a 4xx in OpenAI's shape and starts no workflow; upstream failures are
retried by Temporal where that can help and otherwise fail the response with the reason."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from datetime import UTC, datetime

import openai
import pytest

from models.workflow_io import RetryBudget
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import TEST_EXECUTION, EmptyStore, Stack, running_stack

BAD_REQUESTS = [
    # (body, status, param, words the message must contain)
    (b'{"model": "m", "input": ', 400, None, "JSON"),
    (b'["not", "an", "object"]', 400, None, "JSON object"),
    ({"input": "hi"}, 400, "model", "Missing required parameter"),
    ({"model": "m"}, 400, "input", "Missing required parameter"),
    ({"model": "m", "input": "hi", "bogus": 1}, 400, "bogus", "Unknown parameter"),
    ({"model": "m", "input": [{"type": "teleport", "x": 1}]}, 400, "input[0].type", "teleport"),
    (
        {"model": "m", "input": "hi", "tools": [{"type": "image_generation"}]},
        400,
        "tools[0].type",
        "image_generation",
    ),
    (
        {
            "model": "m",
            "input": [
                {
                    "type": "shell_call_output",
                    "call_id": "call_zzz",
                    "output": [{"stdout": "", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}],
                }
            ],
        },
        400,
        "input[0]",
        "call_zzz",
    ),
    (
        {"model": "m", "input": "hi", "tools": [{"type": "file_search", "vector_store_ids": ["vs_1"]}]},
        404,
        "tools[0].vector_store_ids[0]",
        "not found",
    ),
    (
        {"model": "m", "input": "hi", "tools": [{"type": "file_search", "vector_store_ids": []}]},
        400,
        "tools[0].vector_store_ids",
        "at least 1",
    ),
    ({"model": "m", "input": "hi", "temperature": 7}, 400, "temperature", "less than or equal to 2"),
    ({"model": "m", "input": "hi", "prompt": {"id": "pmpt_1"}}, 404, "prompt.id", "not found"),
    ({"model": "m", "input": "hi", "moderation": {"model": "omni"}}, 400, "moderation.model", "not a moderation model"),
    ({"model": "m", "input": "hi", "conversation": "conv_1"}, 404, "conversation", "not found"),
    (
        {"model": "m", "input": "hi", "conversation": "conv_1", "previous_response_id": "resp_1"},
        400,
        None,
        "mutually exclusive",
    ),
    ({"model": "m", "input": "hi", "tool_choice": {"type": "function", "name": "nope"}}, 400, "tool_choice", "nope"),
    ({"model": "m", "input": "hi", "background": True, "store": False}, 400, "background", "store"),
    ({"model": "m", "input": [{"type": "item_reference", "id": "msg_1"}]}, 404, "input[0].id", "not found"),
    ({"model": "m", "input": "hi", "include": ["everything"]}, 400, "include[0]", "include"),
    (
        {"model": "m", "input": [{"type": "function_call_output", "call_id": "call_zzz", "output": "x"}]},
        400,
        "input[0]",
        "call_zzz",
    ),
    (
        {"model": "m", "input": [{"role": "user", "content": [{"type": "input_image", "file_id": "file_1"}]}]},
        400,
        "input[0].content[0]",
        "image_url",
    ),
    ({"model": "m", "input": "hi", "metadata": {f"k{i}": "v" for i in range(17)}}, 400, "metadata", "16"),
    ({"model": "m", "input": "hi", "previous_response_id": "resp_missing"}, 404, "previous_response_id", "not found"),
]


async def _workflow_count(stack: Stack, since: str) -> int:
    """Workflows of the stack's task queue started since `since` (others' histories may be
    erased meanwhile: deleted and unstored responses leave none)."""
    query = f"TaskQueue = '{stack.settings.task_queue}' AND StartTime >= '{since}'"
    return (await stack.client.count_workflows(query)).count


async def test_bad_requests_are_refused_before_temporal(stack: Stack, sdk: openai.AsyncOpenAI):
    await sdk.responses.create(model="warm-up", input="hi")
    await asyncio.sleep(1.5)  # visibility is eventually consistent
    since = datetime.now(UTC).isoformat()
    before = await _workflow_count(stack, since)
    async with stack.http() as http:
        for body, status, param, words in BAD_REQUESTS:
            if isinstance(body, bytes):
                answer = await http.post("/v1/responses", content=body, headers={"content-type": "application/json"})
            else:
                answer = await http.post("/v1/responses", json=body)
            assert answer.status_code == status, (body, answer.text)
            error = answer.json()["error"]
            assert set(error) == {"message", "type", "param", "code"}
            assert error["type"] == "invalid_request_error"
            assert error["param"] == param, (body, error)
            assert words.lower() in error["message"].lower(), (body, error)
    marker = await sdk.responses.create(model="marker", input="counted")
    deadline = time.monotonic() + 10
    while await _workflow_count(stack, since) < before + 1 and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert await _workflow_count(stack, since) == before + 1, "a refused request started a workflow"
    assert marker.status == "completed"


async def test_sdk_raises_typed_errors(sdk: openai.AsyncOpenAI):
    with pytest.raises(openai.BadRequestError) as refused:
        await sdk.responses.create(model="m", input="hi", extra_body={"unknown_thing": True})
    assert refused.value.body["param"] == "unknown_thing"
    with pytest.raises(openai.NotFoundError):
        await sdk.responses.retrieve("resp_does_not_exist")
    with pytest.raises(openai.NotFoundError):
        await sdk.responses.input_items.list("resp_does_not_exist")


async def test_unknown_route_answers_in_openai_shape(stack: Stack):
    async with stack.http() as http:
        answer = await http.get("/v1/nothing-here")
    assert answer.status_code == 404
    assert answer.json()["error"]["type"] == "invalid_request_error"


async def test_upstream_4xx_fails_the_response_with_its_message(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(status=400, error_message="unsupported value for parameter 'seed'")])
    response = await sdk.responses.create(model=model, input="hi")
    assert response.status == "failed"  # (a refusal of a context too long: `tests/stack/test_context_window.py`)
    assert response.error is not None and "unsupported value for parameter 'seed'" in response.error.message
    assert "400" in response.error.message
    assert len(backend.requests(model)) == 1, "a 4xx must not be retried"
    stored = await sdk.responses.retrieve(response.id)
    assert stored.status == "failed" and stored.error.message == response.error.message


@pytest.mark.parametrize("status", [429, 500, 503, 408])
async def test_transient_upstream_failures_are_retried(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, status: int
):
    backend.script(model, [Reply(status=status), Reply(status=status), Reply(text="finally")])
    response = await sdk.responses.create(model=model, input="hi")
    assert response.status == "completed" and response.output_text == "finally"
    assert len(backend.requests(model)) == 3


async def test_retry_after_is_honoured(sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str):
    backend.script(model, [Reply(status=429, headers={"retry-after": "1"}), Reply(text="after the wait")])
    started = time.monotonic()
    response = await sdk.responses.create(model=model, input="hi")
    assert response.output_text == "after the wait"
    assert time.monotonic() - started >= 0.95  # the test budget's own backoff is 0.05 s


async def test_persistent_upstream_failure_ends_failed_after_the_budget(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    attempts = stack.settings.execution.inference.maximum_attempts
    backend.script(model, [Reply(status=503, error_message="overloaded")] * (attempts + 2))
    response = await sdk.responses.create(model=model, input="hi")
    assert response.status == "failed"
    assert "503" in response.error.message and "overloaded" in response.error.message
    assert len(backend.requests(model)) == attempts


async def test_unreachable_backend_is_retried_then_fails_naming_it(
    temporal_address: str, store: EmptyStore, model: str
):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = ScriptedBackend()
        closed.port = probe.getsockname()[1]  # nothing listens there once the probe closes
    async with running_stack(temporal_address, closed, store) as stack, stack.sdk() as client:
        response = await client.responses.create(model=model, input="hi")
    assert response.status == "failed"
    assert response.error.message == "the inference backend is unreachable: connection refused (is it running?)"


# A retry would come 20 s after the first attempt: a response that ends sooner was not retried.
NO_RETRY_WITHIN = TEST_EXECUTION.model_copy(
    update={
        "inference": RetryBudget(
            start_to_close_seconds=30, maximum_attempts=3, initial_interval_seconds=20, maximum_interval_seconds=20
        )
    }
)


@pytest.mark.parametrize(
    ("base_url", "words"),
    [
        ("http://no-such-host.invalid/v1", "its host name does not resolve"),
        ("https://127.0.0.1:{port}/v1", "TLS handshake failed"),
    ],
)
async def test_a_backend_that_cannot_work_as_configured_fails_at_once(
    temporal_address: str,
    store: EmptyStore,
    backend: ScriptedBackend,
    model: str,
    base_url: str,
    words: str,
    caplog: pytest.LogCaptureFixture,
):
    """A host that does not resolve, TLS to a plain-HTTP server: settings to fix, which no
    retry mends, so the response fails at once with the cause (the URL is the operator's, in
    the log)."""
    url = base_url.format(port=backend.port)
    with caplog.at_level(logging.WARNING, logger="chat_completions.client"):
        async with (
            running_stack(temporal_address, backend, store, inference_base_url=url, execution=NO_RETRY_WITHIN) as stack,
            stack.sdk() as client,
        ):
            started = time.monotonic()
            response = await client.responses.create(model=model, input="hi")
            took = time.monotonic() - started
    assert any(url in record.getMessage() for record in caplog.records), "the operator's log names the URL"
    assert response.status == "failed"
    assert response.error.message.startswith("the inference backend: ")
    assert words in response.error.message and url.split("//")[1].split("/")[0] not in response.error.message
    assert took < 15, "failed only after a retry"


@pytest.mark.parametrize(
    ("status", "api_key", "words"),
    [
        (401, "", "it wants an API key and none is set: set INFERENCE_API_KEY"),
        (401, "sk-wrong", "the API key was refused: set INFERENCE_API_KEY"),
        (404, "", "is model '{model}' served there, and does INFERENCE_BASE_URL end in /v1?"),
    ],
)
async def test_a_refused_key_or_an_unknown_model_fails_at_once_saying_what_to_check(
    temporal_address: str,
    store: EmptyStore,
    backend: ScriptedBackend,
    model: str,
    status: int,
    api_key: str,
    words: str,
):
    backend.script(model, [Reply(status=status, error_message="nope")])
    async with (
        running_stack(temporal_address, backend, store, inference_api_key=api_key) as stack,
        stack.sdk() as client,
    ):
        response = await client.responses.create(model=model, input="hi")
    assert response.status == "failed"
    assert response.error.message == (f"the inference backend answered {status}: nope ({words.format(model=model)})")
    assert api_key == "" or api_key not in response.error.message
    assert len(backend.requests(model)) == 1, "retrying cannot mend a refused key or an unknown model"


async def test_a_refusing_backend_shows_a_tenant_neither_its_url_nor_any_part_of_the_key(
    temporal_address: str, store: EmptyStore, backend: ScriptedBackend, model: str
):
    """As OpenAI refuses a key: its message shows the key masked but for its tail, and a URL.
    A tenant of this server once read both, and the backend's own URL besides."""
    key = "sk-proj-" + "Q" * 40 + "tailWXYZ9"
    said = (
        "Incorrect API key provided: sk-proj-****************************************WXYZ9. You can find your "
        f"API key at https://platform.openai.com/account/api-keys (sent to {backend.base_url}, key {key[-12:]})."
    )
    backend.script(model, [Reply(status=401, error_message=said)])
    async with (
        running_stack(temporal_address, backend, store, inference_api_key=key) as stack,
        stack.sdk() as client,
    ):
        response = await client.responses.create(model=model, input="hi")
    message = response.error.message
    assert response.status == "failed" and message.startswith("the inference backend answered 401: "), message
    assert "Incorrect API key provided" in message
    assert f"127.0.0.1:{backend.port}" not in message and "http" not in message, message
    assert not any(key[start : start + 6] in message for start in range(len(key) - 5)), message
    assert "WXYZ" not in message and "****" not in message, message
