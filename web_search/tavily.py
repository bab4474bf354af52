"""Tavily: `POST /search` with a bearer key; `include_domains` and `country` are its own."""

from __future__ import annotations

from models.errors import SearchRefusedError
from web_search.provider import KeyedProvider, SearchQuery, SearchResult, cut, fetch_json

BASE_URL = "https://api.tavily.com"
COUNTRIES = {
    "US": "united states",
    "GB": "united kingdom",
    "DE": "germany",
    "FR": "france",
    "JP": "japan",
    "CA": "canada",
    "AU": "australia",
    "IN": "india",
    "BR": "brazil",
    "ES": "spain",
    "IT": "italy",
}


class TavilyProvider(KeyedProvider):
    name = "tavily"
    base_url_default = BASE_URL

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        key = self.key()
        payload: dict[str, object] = {
            "query": query.query,
            "max_results": query.max_results,
            "search_depth": "advanced" if query.depth == "high" else "basic",
        }
        if query.allowed_domains:
            payload["include_domains"] = list(query.allowed_domains)
        if query.country and query.country.upper() in COUNTRIES:
            payload["country"] = COUNTRIES[query.country.upper()]
        body = await fetch_json(
            self.policy,
            "POST",
            f"{self.base_url}/search",
            provider=self.name,
            json=payload,
            headers={"authorization": f"Bearer {key}"},
        )
        listed = body.get("results") if isinstance(body, dict) else None
        if not isinstance(listed, list):
            raise SearchRefusedError("the tavily search provider answered without `results`")
        return [
            SearchResult(url=str(each["url"]), title=cut(each.get("title")), snippet=cut(each.get("content")))
            for each in listed
            if isinstance(each, dict) and isinstance(each.get("url"), str)
        ]
