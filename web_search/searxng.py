"""SearXNG (self-hosted, no key): `GET /search?q=...&format=json`; its JSON API must be on
(`search.formats: [html, json]` in its settings.yml)."""

from __future__ import annotations

from access.egress import EgressPolicy
from models.errors import SearchRefusedError
from web_search.provider import SearchQuery, SearchResult, cut, fetch_json

DEFAULT_URL = "http://127.0.0.1:8080"
"""Where a SearXNG is looked for when `WEB_SEARCH_URL` does not say."""
DEPTH_PAGES = {"low": 1, "medium": 1, "high": 2}


class SearxngProvider:
    name = "searxng"

    def __init__(self, base_url: str, policy: EgressPolicy) -> None:
        self.base_url = base_url.rstrip("/")
        self.policy = policy

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        params = {"q": query.query, "format": "json"}
        if query.country:
            params["language"] = f"all-{query.country.upper()}"
        results: list[SearchResult] = []
        for page in range(1, DEPTH_PAGES[query.depth] + 1):
            body = await fetch_json(
                self.policy, "GET", f"{self.base_url}/search", provider=self.name, params=params | {"pageno": str(page)}
            )
            listed = body.get("results") if isinstance(body, dict) else None
            if not isinstance(listed, list):
                raise SearchRefusedError(
                    "the searxng search provider answered without `results` (is its JSON format enabled?)"
                )
            results += [
                SearchResult(url=str(each["url"]), title=cut(each.get("title")), snippet=cut(each.get("content")))
                for each in listed
                if isinstance(each, dict) and isinstance(each.get("url"), str)
            ]
        return results
