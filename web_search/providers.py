"""The provider the settings choose (None: web search is off)."""

from __future__ import annotations

from access.egress import EgressPolicy
from web_search.brave import BraveProvider
from web_search.demo import DemoSearchProvider
from web_search.provider import SearchProvider, SearchSettings
from web_search.searxng import DEFAULT_URL as SEARXNG_DEFAULT_URL
from web_search.searxng import SearxngProvider
from web_search.tavily import TavilyProvider


def provider_for(settings: SearchSettings, policy: EgressPolicy) -> SearchProvider | None:
    match settings.provider:
        case "searxng":
            return SearxngProvider(settings.url or SEARXNG_DEFAULT_URL, policy)
        case "tavily":
            return TavilyProvider(settings.url, settings.api_key, policy)
        case "brave":
            return BraveProvider(settings.url, settings.api_key, policy)
        case "demo":
            return DemoSearchProvider()
    return None
