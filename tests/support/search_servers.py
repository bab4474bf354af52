"""A fake search provider over real HTTP, answering in the shapes the providers document:
SearXNG's `GET /search?format=json`, Tavily's `POST /search`, Brave's `GET /web/search`.
Every request is recorded (`requests`); `fail_next(status, times)` answers that status
first; `key` set: a request without that key is refused 401, as the providers do."""

from __future__ import annotations

import threading
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.support.threaded_server import ThreadedServer

RESULTS = [
    {
        "url": "https://temporal.io/blog/durable-execution",
        "title": "What is durable execution?",
        "content": "Durable execution means a program's progress survives crashes of the processes running it.",
    },
    {
        "url": "https://docs.temporal.io/workflows",
        "title": "Temporal Workflows",
        "content": "A Workflow Execution is durable, reliable and scalable.",
    },
    {"url": "https://example.org/elsewhere", "title": "Somewhere else", "content": "An unrelated page."},
]


class SearchServer:
    def __init__(self, key: str = "") -> None:
        self.key = key
        self.results = list(RESULTS)
        self.requests: list[dict[str, Any]] = []
        self._failures: list[int] = []
        self._bodies: list[bytes] = []
        self._lock = threading.Lock()
        self._server: ThreadedServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.port}"

    def fail_next(self, status: int, times: int = 1) -> None:
        with self._lock:
            self._failures.extend([status] * times)

    def answer_next(self, body: bytes) -> None:
        """Answer the next request 200 with exactly these bytes (whatever the provider)."""
        with self._lock:
            self._bodies.append(body)

    def queries(self) -> list[str]:
        with self._lock:
            return [request["query"] for request in self.requests]

    def start(self) -> SearchServer:
        app = Starlette(
            routes=[
                Route("/search", self._searxng, methods=["GET"]),
                Route("/search", self._tavily, methods=["POST"]),
                Route("/web/search", self._brave, methods=["GET"]),
            ]
        )
        self._server = ThreadedServer(app, "search-server", lifespan="off").start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(join_seconds=5)

    def _refusal(self, query: str, given_key: str, provider: str) -> Response | None:
        with self._lock:
            self.requests.append({"provider": provider, "query": query, "key": given_key})
            failure = self._failures.pop(0) if self._failures else None
            body = self._bodies.pop(0) if self._bodies else None
        if body is not None:
            return Response(body, media_type="application/json")
        if failure is not None:
            return JSONResponse({"error": "scripted failure"}, status_code=failure)
        if self.key and given_key != self.key:
            return JSONResponse({"detail": {"error": "Unauthorized: missing or invalid API key."}}, status_code=401)
        return None

    async def _searxng(self, request: Request) -> Response:
        query = request.query_params.get("q", "")
        if request.query_params.get("format") != "json":
            return Response("<html>only html</html>", status_code=403)
        refused = self._refusal(query, "", "searxng")
        return refused or JSONResponse(
            {
                "query": query,
                "number_of_results": len(self.results),
                "results": [
                    {
                        **result,
                        "engine": "duckduckgo",
                        "parsed_url": ["https", result["url"].split("/")[2]],
                        "score": 1.0,
                    }
                    for result in self.results
                ],
                "answers": [],
                "suggestions": [],
                "unresponsive_engines": [],
            }
        )

    async def _tavily(self, request: Request) -> Response:
        body = await request.json()
        refused = self._refusal(
            body.get("query", ""), request.headers.get("authorization", "").removeprefix("Bearer "), "tavily"
        )
        domains = body.get("include_domains") or []
        results = [result for result in self.results if not domains or any(d in result["url"] for d in domains)]
        return refused or JSONResponse(
            {
                "query": body.get("query"),
                "follow_up_questions": None,
                "answer": None,
                "images": [],
                "response_time": 0.42,
                "results": [
                    {
                        "title": result["title"],
                        "url": result["url"],
                        "content": result["content"],
                        "score": 0.9,
                        "raw_content": None,
                    }
                    for result in results[: body.get("max_results", 5)]
                ],
            }
        )

    async def _brave(self, request: Request) -> Response:
        refused = self._refusal(
            request.query_params.get("q", ""), request.headers.get("x-subscription-token", ""), "brave"
        )
        return refused or JSONResponse(
            {
                "type": "search",
                "query": {"original": request.query_params.get("q")},
                "mixed": {"type": "mixed", "main": []},
                "web": {
                    "type": "search",
                    "results": [
                        {
                            "title": result["title"],
                            "url": result["url"],
                            "description": result["content"],
                            "type": "search_result",
                            "is_source_local": False,
                            "language": "en",
                        }
                        for result in self.results
                    ],
                },
            }
        )
