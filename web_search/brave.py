"""Brave Search: `GET /web/search` with `X-Subscription-Token`; results under `web.results`."""

from __future__ import annotations

from models.errors import SearchRefusedError
from web_search.provider import KeyedProvider, SearchQuery, SearchResult, cut, fetch_json

BASE_URL = "https://api.search.brave.com/res/v1"


class BraveProvider(KeyedProvider):
    name = "brave"
    base_url_default = BASE_URL

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        key = self.key()
        params = {"q": query.query, "count": str(min(query.max_results, 20))}
        if query.country:
            params["country"] = query.country.lower()
        body = await fetch_json(
            self.policy,
            "GET",
            f"{self.base_url}/web/search",
            provider=self.name,
            params=params,
            headers={"x-subscription-token": key, "accept": "application/json"},
        )
        web = body.get("web") if isinstance(body, dict) else None
        if not isinstance(body, dict) or (web is not None and not isinstance(web, dict)):
            raise SearchRefusedError("the brave search provider answered in a shape not understood")
        listed = (web or {}).get("results") or []
        return [
            SearchResult(url=str(each["url"]), title=cut(each.get("title")), snippet=cut(each.get("description")))
            for each in listed
            if isinstance(each, dict) and isinstance(each.get("url"), str)
        ]
