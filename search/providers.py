"""The provider the settings choose (None: web search is off)."""

from __future__ import annotations

from access.egress import EgressPolicy
from search.brave import BraveProvider
from search.demo import DemoSearchProvider
from search.provider import SearchProvider, SearchSettings
from search.searxng import DEFAULT_URL as SEARXNG_DEFAULT_URL
from search.searxng import SearxngProvider
from search.tavily import TavilyProvider


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
