"""The demo model as a chat-completions backend inside the worker (`INFERENCE_BASE_URL=demo`).

It answers the inference activity as an HTTP backend would, through the same interface
(`chat_completions.client.ChatBackend`): whole completions, or chunks streamed word by word at
the demo model's pace, and failures as the same `UpstreamError`s, so everything between the
client and the backend (the workflow, retries, the event log, streaming, cancel) is the real
thing. It lives in the worker, not behind a port, so `worker` processes of a split deployment
can use it too.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson

from demo.keyword_moderation import moderations_answer
from demo.lexical_embedder import lexical_vector
from demo.model import DEMO_MODELS, DemoModel, DemoReply, reply_to
from models.errors import RejectedByUpstreamError, RetryableUpstreamError
from models.ids import new_id

DEMO_BASE_URL = "demo"
REMEMBERED_ANSWERS = 10_000
"""How many answers `demo/flaky` remembers having broken once (oldest forgotten first)."""

Chunk = dict[str, Any]


class DemoBackend:
    base_url = DEMO_BASE_URL

    def __init__(self) -> None:
        self._broken_once: OrderedDict[bytes, None] = OrderedDict()

    async def complete(self, body: dict[str, Any], on_headers: object = None) -> dict[str, Any]:
        model = self._model(body)
        if self._fails_now(model, body):
            raise RetryableUpstreamError(f"{model.name} failed on purpose (500): {model.description}", status_code=500)
        reply = reply_to(body)
        await asyncio.sleep(model.first_word_seconds + model.seconds_per_word * len(reply.words()))
        return _completion(model, body, reply)

    @asynccontextmanager
    async def stream(
        self, body: dict[str, Any], on_headers: object = None
    ) -> AsyncIterator[AsyncIterator[list[Chunk]]]:
        model = self._model(body)
        reply = reply_to(body)
        if model.failure == "always":
            raise RetryableUpstreamError(f"{model.name} failed on purpose (500): {model.description}", status_code=500)
        yield _one_at_a_time(self._chunks(model, body, reply, break_halfway=self._fails_now(model, body)))

    async def embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        """Every demo model embeds with the lexical embedder that ships in the package."""
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        return {
            "object": "list",
            "model": body.get("model"),
            "data": [
                {"object": "embedding", "index": index, "embedding": lexical_vector(str(text))}
                for index, text in enumerate(texts)
            ],
        }

    async def moderations(self, body: dict[str, Any]) -> dict[str, Any]:
        """The demo classifies with the keyword classifier that ships in the package (off the
        event loop: a long text is a few milliseconds of CPU)."""
        return await asyncio.to_thread(moderations_answer, body)

    async def aclose(self) -> None:
        return None

    def _model(self, body: dict[str, Any]) -> DemoModel:
        name = str(body.get("model"))
        if name not in DEMO_MODELS:
            raise RejectedByUpstreamError(
                f"inference backend demo answered 404: model {name!r} does not exist; the demo models are "
                + ", ".join(f"{each.name} ({each.description})" for each in DEMO_MODELS.values()),
                status_code=404,
            )
        return DEMO_MODELS[name]

    def _fails_now(self, model: DemoModel, body: dict[str, Any]) -> bool:
        """`always` fails every attempt; `first_attempt` fails the first attempt at each distinct
        request (the retry sends the same one) and answers the next."""
        if model.failure == "always":
            return True
        if model.failure == "none":
            return False
        key = orjson.dumps(body.get("messages"), option=orjson.OPT_SORT_KEYS)
        if key in self._broken_once:
            return False
        self._broken_once[key] = None
        while len(self._broken_once) > REMEMBERED_ANSWERS:
            self._broken_once.popitem(last=False)
        return True

    async def _chunks(
        self, model: DemoModel, body: dict[str, Any], reply: DemoReply, *, break_halfway: bool
    ) -> AsyncIterator[Chunk]:
        base = {
            "id": new_id("chatcmpl"),
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model.name,
        }

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> Chunk:
            return base | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

        yield chunk({"role": "assistant", "content": ""})
        await asyncio.sleep(model.first_word_seconds)
        words = reply.words()
        for count, word in enumerate(words):
            if break_halfway and count >= max(1, len(words) // 2):
                raise RetryableUpstreamError(
                    f"{model.name} broke the connection on purpose halfway through its first attempt"
                )
            if count:
                await asyncio.sleep(model.seconds_per_word)
            yield chunk({"content": word})
        for index, call in enumerate(reply.tool_calls):
            yield chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": new_id("call"),
                            "type": "function",
                            "function": {"name": call.name, "arguments": orjson.dumps(call.arguments).decode()},
                        }
                    ]
                }
            )
        yield chunk({}, reply.finish_reason)
        yield base | {"choices": [], "usage": _usage(body, reply)}


async def _one_at_a_time(chunks: AsyncIterator[Chunk]) -> AsyncIterator[list[Chunk]]:
    """The demo's words come one at a time: each chunk a batch of its own."""
    async for chunk in chunks:
        yield [chunk]


def _completion(model: DemoModel, body: dict[str, Any], reply: DemoReply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": new_id("call"),
                "type": "function",
                "function": {"name": call.name, "arguments": orjson.dumps(call.arguments).decode()},
            }
            for call in reply.tool_calls
        ]
    return {
        "id": new_id("chatcmpl"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model.name,
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
        "usage": _usage(body, reply),
    }


def _usage(body: dict[str, Any], reply: DemoReply) -> dict[str, int]:
    """Words counted as tokens."""
    prompt = sum(
        len(str(message.get("content") or "").split())
        for message in body.get("messages") or []
        if isinstance(message, dict)
    )
    completion = len(reply.words()) + sum(len(call.arguments) + 1 for call in reply.tool_calls)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
