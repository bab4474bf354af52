"""Tavily: `POST /search` with a bearer key; `include_domains` and `country` are its own."""

from __future__ import annotations

from access.egress import EgressPolicy
from search.provider import SearchQuery, SearchRefusedError, SearchResult, cut, fetch_json

BASE_URL = "https://api.tavily.com"
COUNTRIES = {"US": "united states", "GB": "united kingdom", "DE": "germany", "FR": "france", "JP": "japan",
             "CA": "canada", "AU": "australia", "IN": "india", "BR": "brazil", "ES": "spain", "IT": "italy"}


class TavilyProvider:
    name = "tavily"

    def __init__(self, base_url: str | None, api_key: str, policy: EgressPolicy) -> None:
        self.base_url = (base_url or BASE_URL).rstrip("/")
        self.api_key = api_key
        self.policy = policy

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        payload: dict[str, object] = {"query": query.query, "max_results": query.max_results,
                                      "search_depth": "advanced" if query.depth == "high" else "basic"}
        if query.allowed_domains:
            payload["include_domains"] = list(query.allowed_domains)
        if query.country and query.country.upper() in COUNTRIES:
            payload["country"] = COUNTRIES[query.country.upper()]
        body = await fetch_json(self.policy, "POST", f"{self.base_url}/search", provider=self.name, json=payload,
                                headers={"authorization": f"Bearer {self.api_key}"})
        listed = body.get("results") if isinstance(body, dict) else None
        if not isinstance(listed, list):
            raise SearchRefusedError("the tavily search provider answered without `results`")
        return [SearchResult(url=str(each["url"]), title=cut(each.get("title")), snippet=cut(each.get("content")))
                for each in listed if isinstance(each, dict) and isinstance(each.get("url"), str)]
