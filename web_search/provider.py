"""One interface for every search provider, and the settings that choose one.

`WEB_SEARCH_PROVIDER` names the adapter (`searxng`, `tavily`, `brave`, or `demo`: this
project's own README and docs); `WEB_SEARCH_API_KEY` is the key of those that need one;
`WEB_SEARCH_URL` points any of them at another base URL (a proxy, a self-hosted instance, a
test server). Every request goes through the egress guard, as MCP's do, and reads at most
`MAX_REPLY_BYTES` of an answer within `TIMEOUT_SECONDS`.

Failures are typed: `SearchUnavailableError` (5xx, 429, timeouts, refused connections:
retried by Temporal) and `SearchRefusedError` (a bad key, any other 4xx, an answer not
understood: retrying cannot help). Either way the model is told, and the response goes on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol
from urllib.parse import urlsplit

import httpx2

from access.egress import EgressPolicy, EgressRefusedError, ReplyTooLargeError, guarded_http_client
from models.errors import SearchRefusedError, SearchUnavailableError

ProviderName = Literal["searxng", "tavily", "brave", "demo"]
PROVIDERS: tuple[ProviderName, ...] = ("searxng", "tavily", "brave", "demo")
KEYED_PROVIDERS = ("tavily", "brave")
MAX_REPLY_BYTES = 2 * 1024 * 1024
TIMEOUT_SECONDS = 20.0
MAX_RESULTS = 10
SNIPPET_CHARS = 1_000
"""A result's text is cut to this many characters before the model sees it."""


@dataclass(frozen=True)
class SearchResult:
    url: str
    title: str
    snippet: str


@dataclass(frozen=True)
class SearchQuery:
    query: str
    max_results: int = 5
    allowed_domains: tuple[str, ...] = ()
    country: str | None = None
    """ISO 3166 alpha-2, from `user_location.country`."""
    depth: Literal["low", "medium", "high"] = "medium"
    """`search_context_size`."""


class SearchProvider(Protocol):
    name: str

    async def search(self, query: SearchQuery) -> list[SearchResult]: ...


@dataclass(frozen=True)
class SearchSettings:
    provider: ProviderName | None = None
    api_key: str = field(default="", repr=False)
    url: str | None = None

    @property
    def enabled(self) -> bool:
        return self.provider is not None

    def described(self) -> str:
        """One line for the start-up log."""
        if self.provider is None:
            return (
                "web search: off (a `web_search` tool is accepted but not offered to the model; set "
                "WEB_SEARCH_PROVIDER to searxng, tavily or brave to turn it on)"
            )
        if self.provider == "demo":
            return (
                "web search: demo (searches this project's README and docs; set WEB_SEARCH_PROVIDER to searxng, "
                "tavily or brave for the web)"
            )
        where = f" at {urlsplit(self.url).netloc}" if self.url else ""
        return f"web search: {self.provider}{where}"


class KeyedProvider:
    """A vendor's API: its base URL (or `WEB_SEARCH_URL`), its key, the egress guard."""

    name = ""
    base_url_default = ""

    def __init__(self, base_url: str | None, api_key: str, policy: EgressPolicy) -> None:
        self.base_url = (base_url or self.base_url_default).rstrip("/")
        self.api_key = api_key
        self.policy = policy

    def key(self) -> str:
        if not self.api_key:
            raise SearchRefusedError(f"the {self.name} search provider needs a key: set WEB_SEARCH_API_KEY")
        return self.api_key


def allowed(url: str, domains: tuple[str, ...]) -> bool:
    """Whether `url` is on one of `domains` (or a subdomain of one); any URL without domains."""
    if not domains:
        return True
    host = (urlsplit(url).hostname or "").lower()
    return any(host == domain or host.endswith("." + domain) for domain in domains)


async def fetch_json(policy: EgressPolicy, method: str, url: str, *, provider: str, **options: object) -> object:
    """One request to a provider, its JSON answer, or a typed failure naming the provider."""
    try:
        async with guarded_http_client(policy, max_reply_bytes=MAX_REPLY_BYTES, timeout=TIMEOUT_SECONDS) as http:
            answer = await http.request(method, url, **options)  # type: ignore[arg-type]
            body = answer.content
    except EgressRefusedError:
        raise SearchRefusedError(f"the {provider} search provider's address is not one this server may reach") from None
    except ReplyTooLargeError:
        raise SearchRefusedError(
            f"the {provider} search provider answered with more than {MAX_REPLY_BYTES // (1024 * 1024)} MiB"
        ) from None
    except httpx2.TimeoutException:
        raise SearchUnavailableError(
            f"the {provider} search provider did not answer within {TIMEOUT_SECONDS:g} s"
        ) from None
    except httpx2.HTTPError as error:
        raise SearchUnavailableError(
            f"the {provider} search provider cannot be reached ({type(error).__name__})"
        ) from None
    status = answer.status_code
    if status in (401, 403):
        raise SearchRefusedError(
            f"the {provider} search provider refused the key (HTTP {status}): check WEB_SEARCH_API_KEY"
        )
    if status == 429 or status >= 500 or status == 408:
        raise SearchUnavailableError(f"the {provider} search provider answered HTTP {status}")
    if status >= 400:
        raise SearchRefusedError(f"the {provider} search provider refused the search (HTTP {status})")
    try:
        return answer.json() if body else None
    except ValueError:
        raise SearchRefusedError(f"the {provider} search provider answered with something that is not JSON") from None


def cut(text: object) -> str:
    return str(text or "").strip()[:SNIPPET_CHARS]
