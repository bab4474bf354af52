"""A scripted OpenAI-compatible chat-completions backend, served over real HTTP.

The `model` of a request picks its behaviour:
- a model with a script (`backend.script(model, [...])`) gets the next scripted `Reply`;
- a model named `calls/<tool>` calls `<tool>` with the last user message (a JSON object) as
  its arguments, and once a tool's result is in the messages answers "done: <result>": the
  same request always gets the same answer, however often a retry sends it;
- any other model gets an echo of the last user message ("echo: <text>"), streamed a chunk
  every `DRIP_SECONDS` when the model is named `drip` (a stream long enough for a fault to
  land in it), or asked to compact a context (`context/compaction.py`'s prompt), a short summary.
A model given a context window (`backend.limit_context`) refuses longer requests as vLLM
does (400 "This model's maximum context length is N tokens..."), counting tokens its own
plain way (`reference_tokens`: one a word, one a mark, 3 a message).
Every request is recorded per model (`backend.requests(model)`), so tests can check what
durable-responses sent upstream. `latency` delays every answer (the benchmark's backend).

Runs in its own thread with its own event loop, so it keeps answering whatever the test's
loop is doing.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from context.compaction import is_summariser_request
from demo.keyword_moderation import moderations_answer
from demo.lexical_embedder import lexical_vector
from tests.support.threaded_server import ThreadedServer


@dataclass
class Reply:
    """One scripted answer: text and/or tool calls, or an HTTP error, after `delay` seconds."""

    text: str | None = None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    finish_reason: str | None = None
    status: int = 200
    error_message: str = "scripted failure"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    usage: tuple[int, int] = (10, 5)
    chunk_delay: float = 0.0
    """Seconds between streamed chunks."""
    chunk_chars: int | None = None
    """Characters of text a streamed chunk carries (default: a few, or a huge text in about
    256 chunks)."""
    cut_after_chunks: int | None = None
    """Break the connection: streamed, after this many chunks; not streamed, halfway through
    the body (a connection reset mid-answer)."""
    reasoning: str | None = None
    """Reasoning, as vLLM and DeepSeek's backends return it (`reasoning_content`), streamed
    before the text."""
    reasoning_tokens: int = 0


DRIP_SECONDS = 0.05
"""Between the chunks of model `drip`'s echo."""


class TokenBucket:
    """A provider's rate limit: `rate` requests a second, up to `burst` at once."""

    def __init__(self, rate: float, burst: float | None = None) -> None:
        self.rate = rate
        self.burst = burst if burst is not None else rate
        self._tokens = self.burst
        self._at = time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens >= 1:
            self._tokens -= 1
            return True
        return False


class Gathering:
    """Requests held until `count` are held at once (on the backend's own event loop)."""

    def __init__(self, count: int, seconds: float) -> None:
        self.count, self.seconds = count, seconds
        self.held = 0
        self.most = 0
        """The most held at once."""
        self.met = False
        self._all_here: asyncio.Event | None = None

    async def arrive(self) -> None:
        if self._all_here is None:
            self._all_here = asyncio.Event()
        self.held += 1
        self.most = max(self.most, self.held)
        if self.held >= self.count:
            self.met = True
            self._all_here.set()
        try:
            await asyncio.wait_for(self._all_here.wait(), self.seconds)
        except TimeoutError:  # answered without the rest: a later request starts counting again
            pass
        finally:
            self.held -= 1


class ScriptedBackend:
    def __init__(
        self, latency: float = 0.0, *, rate_limit: float | None = None, rate_limit_headers: dict[str, str] | None = None
    ) -> None:
        """`rate_limit`: admit that many requests a second (a token bucket), and answer the rest
        429 with `retry-after: 1`, as providers do."""
        self.latency = latency
        self.bucket = TokenBucket(rate_limit) if rate_limit else None
        self.rate_limit_headers = rate_limit_headers or {}
        self.calls = 0
        """Chat-completion requests received, admitted or not."""
        self.rate_limited = 0
        """How many of them were answered 429."""
        self._scripts: dict[str, deque[Reply]] = defaultdict(deque)
        self._windows: dict[str, int] = {}
        self._listed_windows: dict[str, int] = {}
        self._requests: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self._log: TextIO | None = None
        """Where each request is noted as it arrives (`log_to`), if anywhere."""
        self.embedded: Counter[str] = Counter()
        """Each text the embeddings endpoint embedded, and how often."""
        self.embedding_calls = 0
        self.embedding_delay = 0.0
        self._embeddings_refused_until = 0.0
        self.moderated: list[dict[str, Any]] = []
        """The body of every `/v1/moderations` request, in order."""
        self._gatherings: dict[str, Gathering] = {}
        self._lock = threading.Lock()
        self._server: ThreadedServer | None = None
        self.port = 0

    # ---- what tests call ---------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, model: str, replies: list[Reply]) -> None:
        with self._lock:
            self._scripts[model].extend(replies)

    def limit_context(self, model: str, window: int, *, listed: bool = False) -> None:
        """Refuse requests for `model` longer than `window` tokens; `listed`: say the window
        in `GET /v1/models` as vLLM does (`max_model_len`)."""
        with self._lock:
            self._windows[model] = window
            if listed:
                self._listed_windows[model] = window

    def gather(self, model: str, count: int, seconds: float = 60.0) -> Gathering:
        """Hold each request for `model` until `count` are held at once, then answer them all
        (or, past `seconds`, answer them anyway: `Gathering.met` tells which happened)."""
        gathering = Gathering(count, seconds)
        with self._lock:
            self._gatherings[model] = gathering
        return gathering

    def refuse_embeddings(self, seconds: float) -> None:
        """Answer every embeddings request 429 (`retry-after: 1`) for the next `seconds`."""
        with self._lock:
            self._embeddings_refused_until = time.monotonic() + seconds

    def requests(self, model: str) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._requests[model])

    def log_to(self, path: str) -> None:
        """Append each model and moderation request, as it arrives, to `path`: one JSON
        object a line, `{"time", "model", "path"}` (the bed's record of what upstream saw)."""
        self._log = open(path, "a", buffering=1)  # noqa: SIM115 - open as long as the backend serves

    def _note(self, path: str, model: str) -> None:
        if self._log is not None:
            with self._lock:
                self._log.write(json.dumps({"time": time.time(), "model": model, "path": path}) + "\n")

    # ---- serving -----------------------------------------------------------------------

    def start(self, port: int = 0, host: str = "127.0.0.1") -> ScriptedBackend:
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat_completions, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
                Route("/v1/moderations", self._moderations, methods=["POST"]),
                Route("/v1/_script", self._script_over_http, methods=["POST"]),
                Route("/v1/_calls", self._calls_over_http, methods=["GET"]),
                Route("/v1/_requests", self._requests_over_http, methods=["GET"]),
            ]
        )
        self._server = ThreadedServer(app, "scripted-backend", port, host, lifespan="off").start()
        self.port = self._server.port
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(join_seconds=5)
        if self._log is not None:
            self._log.close()

    async def _embeddings(self, request: Request) -> Response:
        """OpenAI's `/v1/embeddings`, with the lexical embedder's vectors (deterministic, and
        near for texts that share words)."""
        body = await request.json()
        texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
        with self._lock:
            self.embedding_calls += 1
            if time.monotonic() < self._embeddings_refused_until:
                return JSONResponse(
                    {
                        "error": {
                            "message": "Rate limit reached for embeddings",
                            "type": "requests",
                            "code": "rate_limit_exceeded",
                        }
                    },
                    status_code=429,
                    headers={"retry-after": "1"},
                )
            self.embedded.update(texts)  # seen, whether or not its caller lives to read the answer
        if self.embedding_delay:
            await asyncio.sleep(self.embedding_delay)
        return JSONResponse(
            {
                "object": "list",
                "model": body.get("model"),
                "data": [
                    {"object": "embedding", "index": index, "embedding": lexical_vector(text)}
                    for index, text in enumerate(texts)
                ],
                "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
            }
        )

    async def _moderations(self, request: Request) -> Response:
        """OpenAI's `/v1/moderations`, classified by the demo's keyword classifier. A model named
        `down...` answers 503 (a moderation backend that is down); `slow...` waits a second first."""
        body = await request.json()
        with self._lock:
            self.moderated.append(body)
        model = str(body.get("model") or "")
        self._note("/v1/moderations", model)
        if model.startswith("down"):
            return JSONResponse(
                {"error": {"message": "moderation is down", "type": "server_error", "code": None}}, status_code=503
            )
        if model.startswith("slow"):
            await asyncio.sleep(1.0)
        return JSONResponse(moderations_answer(body))

    async def _models(self, _request: Request) -> Response:
        """The backend's own model list (`GET /v1/models`), as OpenAI-compatible servers answer it."""
        with self._lock:
            windows = dict(self._listed_windows)
        return JSONResponse(
            {
                "object": "list",
                "data": [
                    {"id": name, "object": "model", "created": 1700000000, "owned_by": "scripted"}
                    for name in ("scripted-a", "scripted-b")
                ]
                + [
                    {
                        "id": name,
                        "object": "model",
                        "created": 1700000000,
                        "owned_by": "scripted",
                        "max_model_len": window,
                    }
                    for name, window in windows.items()
                ],
            }
        )

    # ---- control over HTTP, for a backend in another process (the benchmark's) ----------

    async def _script_over_http(self, request: Request) -> Response:
        """`{"model": ..., "replies": [{Reply's fields}]}`; tool calls as `[name, arguments]`."""
        body = await request.json()
        self.script(body["model"], [Reply(**reply) for reply in body["replies"]])
        return JSONResponse({"scripted": len(body["replies"])})

    async def _calls_over_http(self, _request: Request) -> Response:
        """How many requests each model has received (admitted ones), and in all (`_all`,
        `_rate_limited`: answered 429)."""
        with self._lock:
            counts = {model: len(requests) for model, requests in self._requests.items()}
            return JSONResponse(counts | {"_all": self.calls, "_rate_limited": self.rate_limited})

    async def _requests_over_http(self, request: Request) -> Response:
        """The bodies of the requests one model has received (`?model=`)."""
        return JSONResponse(self.requests(request.query_params.get("model", "")))

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        model = body.get("model", "")
        with self._lock:
            self._requests[model].append(body)
            script = self._scripts.get(model)
            if script:
                return script.popleft()
        if is_summariser_request(body.get("messages") or []):
            # As a model's summary does, it grows with what it is shown: each user message's
            # first eight words (the summariser's `max_tokens` caps it, as a model's would).
            said = [entry.split()[1:9] for entry in body["messages"][-1]["content"].split("\n\n")]
            summary = "summary: " + "; ".join(" ".join(words) for words in said if words)
            limit = body.get("max_tokens") or body.get("max_completion_tokens")
            if isinstance(limit, int):
                summary = " ".join(summary.split()[:limit])
            return Reply(text=summary, usage=(reference_tokens(body), len(summary.split())))
        last_user = next(
            (message for message in reversed(body.get("messages", [])) if message.get("role") == "user"), None
        )
        content = last_user.get("content") if last_user else ""
        if isinstance(content, list):
            content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
        if model.startswith("calls/"):
            results = [message for message in body.get("messages", []) if message.get("role") == "tool"]
            if results:
                return Reply(text=f"done: {results[-1].get('content')}")
            return Reply(tool_calls=[(model.removeprefix("calls/"), json.loads(content or "{}"))])
        return Reply(text=f"echo: {content}", chunk_delay=DRIP_SECONDS if model == "drip" else 0.0)

    async def _chat_completions(self, request: Request) -> Response:
        body = await request.json()
        self._note("/v1/chat/completions", str(body.get("model") or ""))
        with self._lock:
            self.calls += 1
            admitted = self.bucket is None or self.bucket.take()
            if not admitted:
                self.rate_limited += 1
        if not admitted:
            return JSONResponse(
                {
                    "error": {
                        "message": "Rate limit reached for requests",
                        "type": "requests",
                        "param": None,
                        "code": "rate_limit_exceeded",
                    }
                },
                status_code=429,
                headers={"retry-after": "1", **self.rate_limit_headers},
            )
        with self._lock:
            window = self._windows.get(body.get("model", ""))
        if window is not None and reference_tokens(body) > window:
            with self._lock:
                self._requests[body.get("model", "")].append(body)
            tokens = reference_tokens(body)
            return JSONResponse(
                {
                    "object": "error",
                    "type": "BadRequestError",
                    "param": None,
                    "code": 400,
                    "message": f"This model's maximum context length is {window} tokens. However, you "
                    f"requested {tokens} tokens ({tokens} in the messages, 0 in the "
                    "completion). Please reduce the length of the messages or completion.",
                },
                status_code=400,
            )
        with self._lock:
            gathering = self._gatherings.get(body.get("model", ""))
        if gathering is not None:
            await gathering.arrive()
        reply = self._next_reply(body)
        await asyncio.sleep(self.latency + reply.delay)
        if reply.status != 200:
            return JSONResponse(
                {"error": {"message": reply.error_message, "type": "scripted", "param": None, "code": None}},
                status_code=reply.status,
                headers=reply.headers,
            )
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.reasoning is not None:
            message["reasoning_content"] = reply.reasoning
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{index}_{int(time.time() * 1e6)}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
                for index, (name, arguments) in enumerate(reply.tool_calls)
            ]
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        prompt_tokens, completion_tokens = reply.usage
        logprobs = (
            {"content": _logprobs(reply.text or "", body.get("top_logprobs") or 0)} if body.get("logprobs") else None
        )
        completion = {
            "id": f"chatcmpl-{int(time.time() * 1e6)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": logprobs}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "completion_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
            },
        }
        if body.get("stream"):
            return StreamingResponse(
                _as_chunks(completion, reply), media_type="text/event-stream", headers=reply.headers
            )
        if reply.cut_after_chunks is not None:
            whole = json.dumps(completion).encode()
            return StreamingResponse(
                _half_then_reset(whole), media_type="application/json", headers={"content-length": str(len(whole))}
            )
        return JSONResponse(completion, headers=reply.headers)


_WORD = re.compile(r"\w+|[^\w\s]")


def reference_tokens(body: dict[str, Any]) -> int:
    """The backend's own count of a request's tokens: one a word, one a mark, 3 a message."""
    count = 0
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
        count += 3 + len(_WORD.findall(str(content or "")))
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            count += len(_WORD.findall(f"{function.get('name', '')} {function.get('arguments', '')}"))
    if body.get("tools"):
        count += len(_WORD.findall(json.dumps(body["tools"])))
    return count


async def _as_chunks(completion: dict[str, Any], reply: Reply) -> AsyncIterator[str]:
    """The same answer as chat.completion.chunk events, paced and cut as the reply says."""
    for count, piece in enumerate(_chunks(completion, reply.chunk_chars)):
        if reply.cut_after_chunks is not None and count >= reply.cut_after_chunks:
            raise ConnectionResetError("scripted cut mid-stream")
        if reply.chunk_delay and count:
            await asyncio.sleep(reply.chunk_delay)
        yield piece


async def _half_then_reset(whole: bytes) -> AsyncIterator[bytes]:
    yield whole[: len(whole) // 2]
    raise ConnectionResetError("scripted cut mid-body")


def _step(text: str, small: int) -> int:
    """Chunk size: a few characters, as models stream; a huge text in about 256 chunks."""
    return small if len(text) < 64 * 1024 else len(text) // 256


def _chunks(completion: dict[str, Any], chunk_chars: int | None = None) -> Iterator[str]:
    base = {key: completion[key] for key in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    message = completion["choices"][0]["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> str:
        payload = base | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if usage is None else []}
        if usage is not None:
            payload["usage"] = usage
        return f"data: {json.dumps(payload)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    reasoning = message.get("reasoning_content") or ""
    for start in range(0, len(reasoning), 4):
        yield chunk({"reasoning_content": reasoning[start : start + 4]})
    text = message.get("content") or ""
    logprobs = (completion["choices"][0]["logprobs"] or {}).get("content")
    step = chunk_chars or _step(text, 4)
    for start in range(0, len(text), step):
        piece = chunk({"content": text[start : start + step]})
        if logprobs:
            payload = json.loads(piece[len("data: ") :])
            payload["choices"][0]["logprobs"] = {"content": logprobs[start // 4 : start // 4 + 1]}
            piece = f"data: {json.dumps(payload)}\n\n"
        yield piece
    for index, call in enumerate(message.get("tool_calls") or []):
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": call["function"]["name"], "arguments": ""},
                    }
                ]
            }
        )
        arguments = call["function"]["arguments"]
        step = _step(arguments, 8)
        for start in range(0, len(arguments), step):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[start : start + step]}}]})
    yield chunk({}, completion["choices"][0]["finish_reason"])
    yield chunk({}, usage=completion["usage"])
    yield "data: [DONE]\n\n"


def _logprobs(text: str, top: int) -> list[dict[str, Any]]:
    """One made-up token per four characters, as a backend reports them when asked."""
    tokens = [text[start : start + 4] for start in range(0, len(text), 4)]
    return [
        {
            "token": token,
            "logprob": -0.25,
            "bytes": list(token.encode()),
            "top_logprobs": [{"token": token, "logprob": -0.25, "bytes": list(token.encode())}][:top],
        }
        for token in tokens
    ]


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="serve the scripted backend (echo replies)")
    parser.add_argument("--port", type=int, default=9999)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument(
        "--rate-limit", type=float, default=None, help="admit this many requests a second (429 past it)"
    )
    parser.add_argument("--log", default=None, help="append each model and moderation request to this file")
    arguments = parser.parse_args()
    backend = ScriptedBackend(latency=arguments.latency, rate_limit=arguments.rate_limit)
    if arguments.log:
        backend.log_to(arguments.log)
    backend.start(arguments.port, arguments.host)
    print(f"scripted backend at {backend.base_url}", flush=True)
    threading.Event().wait()
