"""The `web_search` tool: a fake SearXNG (and Tavily and Brave, in the shapes their docs
show) over real HTTP; the model (the scripted backend) calls `web_search`, the search runs as
a durable activity, and the answer cites the provider's URLs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator

import agents
import httpx
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from access.egress import EgressPolicy
from models.errors import SearchRefusedError
from tests.support.histories import keep_recording
from tests.support.openresponses import validate_event, validate_response
from tests.support.processes import free_port
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.search_servers import SearchServer
from tests.support.stack import EmptyStore, Stack, empty_store, running_stack
from web_search.brave import BraveProvider
from web_search.demo import DemoSearchProvider
from web_search.provider import SearchQuery, SearchSettings
from web_search.searxng import SearxngProvider
from web_search.tavily import TavilyProvider

LOCAL = EgressPolicy.parse("127.0.0.1")
SEARCH = [{"type": "web_search"}]
ANSWER = "Durable execution survives crashes [1], as Temporal's documentation says [2]."


@pytest.fixture(scope="module")
def searxng() -> Iterator[SearchServer]:
    server = SearchServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
async def search_stack(
    temporal_address: str,
    backend: ScriptedBackend,
    store_kind: str,
    searxng: SearchServer,
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> AsyncIterator[Stack]:
    store = empty_store(store_kind, tmp_path_factory.mktemp(f"search-{store_kind}"), request)
    async with running_stack(
        temporal_address, backend, store, web_search_provider="searxng", web_search_url=searxng.url
    ) as stack:
        yield stack


@pytest.fixture
async def sdk(search_stack: Stack) -> AsyncIterator[openai.AsyncOpenAI]:
    client = search_stack.sdk(timeout=60)
    yield client
    await client.close()


def searching(model: str, backend: ScriptedBackend, query: str = "durable execution", answer: str = ANSWER) -> None:
    backend.script(model, [Reply(tool_calls=[("web_search", {"query": query})]), Reply(text=answer)])


async def test_a_search_runs_and_the_answer_cites_the_providers_urls(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, searxng: SearchServer, model: str, search_stack: Stack
):
    searching(model, backend)
    response = await sdk.responses.create(
        model=model, input="What is durable execution?", tools=SEARCH, include=["web_search_call.action.sources"]
    )
    assert response.status == "completed"
    call, message = response.output
    assert call.type == "web_search_call" and call.status == "completed"
    assert call.action.type == "search" and call.action.query == "durable execution"
    assert [source.url for source in call.action.sources] == [result["url"] for result in searxng.results]
    assert searxng.queries()[-1] == "durable execution"  # the provider saw the model's query
    offered = backend.requests(model)[0]["tools"]
    assert [tool["function"]["name"] for tool in offered] == ["web_search"]
    shown = [m for m in backend.requests(model)[1]["messages"] if m["role"] == "tool"][0]["content"]
    assert "[1] What is durable execution?" in shown and "https://docs.temporal.io/workflows" in shown
    text = message.content[0]
    assert text.text == ANSWER
    cited = [(a.url, ANSWER[a.start_index : a.end_index]) for a in text.annotations]
    assert cited == [
        ("https://temporal.io/blog/durable-execution", "[1]"),
        ("https://docs.temporal.io/workflows", "[2]"),
    ]
    assert text.annotations[0].title == "What is durable execution?"
    await search_stack.client.get_workflow_handle(response.id).result()
    await keep_recording("web_search", search_stack.client, response.id)
    async with search_stack.http() as http:  # the OpenResponses schema takes the cited message (its items
        shown = (await http.get(f"/v1/responses/{response.id}")).json()  # have no web_search_call)
    validate_response(shown | {"output": [item for item in shown["output"] if item["type"] != "web_search_call"]})


async def test_sources_are_shown_only_when_include_asks(sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str):
    searching(model, backend)
    response = await sdk.responses.create(model=model, input="What is durable execution?", tools=SEARCH)
    assert response.output[0].action.sources is None
    assert response.output[1].content[0].annotations  # citations all the same


async def test_a_streamed_search_sends_openais_events_in_order(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, search_stack: Stack
):
    searching(model, backend)
    async with sdk.responses.stream(model=model, input="What is durable execution?", tools=SEARCH) as stream:
        events = [event async for event in stream]
    kinds = [event.type for event in events]
    search_events = [
        kind for event, kind in zip(events, kinds, strict=True) if getattr(event, "output_index", None) == 0
    ]
    assert search_events == [
        "response.output_item.added",
        "response.web_search_call.in_progress",
        "response.web_search_call.searching",
        "response.web_search_call.completed",
        "response.output_item.done",
    ]
    assert kinds[-1] == "response.completed"
    done = events[-1].response
    assert [item.type for item in done.output] == ["web_search_call", "message"]
    async with search_stack.http() as http:
        replayed = (await http.get(f"/v1/responses/{done.id}", params={"stream": "true"})).text
    for line in replayed.splitlines():  # (the OpenResponses events of the message; it has no web search)
        event = json.loads(line[5:]) if line.startswith("data:") else None
        if event and "web_search" not in event["type"] and event.get("output_index") != 0 and "response" not in event:
            validate_event(event)


async def test_a_provider_down_twice_is_retried_into_one_call(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, searxng: SearchServer, model: str, search_stack: Stack
):
    searching(model, backend, query="flaky provider")
    before = len(searxng.requests)
    searxng.fail_next(500, times=2)
    response = await sdk.responses.create(model=model, input="search, please", tools=SEARCH)
    assert response.status == "completed"
    assert [item.type for item in response.output] == ["web_search_call", "message"]
    assert response.output[0].status == "completed"
    assert len(searxng.requests) - before == 3
    async with search_stack.http() as http:
        shown = (await http.get("/metrics")).text
    assert 'durable_responses_web_search_seconds_count{outcome="unavailable",provider="searxng"}' in shown


async def test_allowed_domains_keep_only_their_results(sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str):
    searching(model, backend)
    response = await sdk.responses.create(
        model=model,
        input="What is durable execution?",
        include=["web_search_call.action.sources"],
        tools=[{"type": "web_search", "filters": {"allowed_domains": ["temporal.io"]}, "search_context_size": "low"}],
    )
    urls = [source.url for source in response.output[0].action.sources]
    assert urls == ["https://temporal.io/blog/durable-execution", "https://docs.temporal.io/workflows"]


async def test_a_refused_search_tells_the_model_and_the_response_completes(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, searxng: SearchServer, model: str, search_stack: Stack
):
    searching(model, backend, query="refused", answer="I could not search.")
    before = len(searxng.requests)
    searxng.fail_next(403)
    response = await sdk.responses.create(model=model, input="search, please", tools=SEARCH)
    assert response.status == "completed" and response.output_text == "I could not search."
    assert response.output[0].type == "web_search_call" and response.output[0].status == "failed"
    told = [m for m in backend.requests(model)[1]["messages"] if m["role"] == "tool"][0]["content"]
    assert told.startswith("Error: the web search failed") and "403" in told
    assert len(searxng.requests) - before == 1  # a refusal is not retried
    await search_stack.client.get_workflow_handle(response.id).result()
    await keep_recording("web_search_refused", search_stack.client, response.id)


@pytest.mark.one_store
async def test_an_unreachable_provider_fails_the_call_not_the_response(
    temporal_address: str,
    backend: ScriptedBackend,
    store,
    model: str,  # noqa: ANN001 - the store fixture
):
    searching(model, backend, answer="No search today.")
    nowhere = f"http://127.0.0.1:{free_port()}"
    async with running_stack(
        temporal_address, backend, store, web_search_provider="searxng", web_search_url=nowhere
    ) as stack:
        async with stack.sdk(timeout=60) as sdk:
            response = await sdk.responses.create(model=model, input="search", tools=SEARCH)
    assert response.status == "completed" and response.output[0].status == "failed"
    told = [m for m in backend.requests(model)[1]["messages"] if m["role"] == "tool"][0]["content"]
    assert "cannot be reached" in told


async def test_without_a_provider_the_tool_is_not_offered(stack: Stack, backend: ScriptedBackend, model: str):
    """Codex always sends `web_search`: it keeps working, and the model is not told of a tool
    nothing would run."""
    async with stack.sdk() as sdk:
        response = await sdk.responses.create(model=model, input="hi", tools=SEARCH)
    assert response.status == "completed"
    assert "tools" not in backend.requests(model)[0]
    assert "WEB_SEARCH_PROVIDER" in SearchSettings().described()


async def test_the_agents_sdk_web_search_tool_works_unchanged(
    search_stack: Stack, backend: ScriptedBackend, model: str, searxng: SearchServer
):
    searching(model, backend, query="agents sdk search")
    agent = agents.Agent(
        name="searcher",
        instructions="Search, then answer.",
        tools=[agents.WebSearchTool()],
        model=agents.OpenAIResponsesModel(model=model, openai_client=search_stack.sdk()),
    )
    result = await agents.Runner.run(agent, "What is durable execution?")
    assert result.final_output == ANSWER
    assert searxng.queries()[-1] == "agents sdk search"
    kinds = [item.type for item in result.new_items]
    assert "tool_call_item" in kinds and kinds[-1] == "message_output_item"


# ---- the adapters, against the shapes the providers document ----------------------------------


@pytest.fixture(scope="module")
def keyed() -> Iterator[SearchServer]:
    server = SearchServer(key="tvly-secret").start()
    yield server
    server.stop()


async def test_the_tavily_adapter_reads_tavilys_answer_and_sends_its_filters(keyed: SearchServer):
    found = await TavilyProvider(keyed.url, "tvly-secret", LOCAL).search(
        SearchQuery("durable", allowed_domains=("docs.temporal.io",), country="US")
    )
    assert [result.url for result in found] == ["https://docs.temporal.io/workflows"]
    assert keyed.requests[-1]["key"] == "tvly-secret"
    with pytest.raises(SearchRefusedError, match="refused the key"):
        await TavilyProvider(keyed.url, "wrong", LOCAL).search(SearchQuery("durable"))


async def test_the_brave_adapter_reads_braves_answer(keyed: SearchServer):
    found = await BraveProvider(keyed.url, "tvly-secret", LOCAL).search(SearchQuery("durable"))
    assert [result.title for result in found][:2] == ["What is durable execution?", "Temporal Workflows"]
    assert found[0].snippet.startswith("Durable execution means")
    with pytest.raises(SearchRefusedError):
        await BraveProvider(keyed.url, "", LOCAL).search(SearchQuery("durable"))


async def test_a_provider_outside_the_egress_guard_is_refused(searxng: SearchServer):
    with pytest.raises(SearchRefusedError, match="may reach"):
        await SearxngProvider(searxng.url, EgressPolicy()).search(SearchQuery("x"))  # loopback is private


async def test_the_demo_provider_searches_this_projects_docs():
    found = await DemoSearchProvider().search(SearchQuery("compaction context window truncation"))
    assert found and found[0].url.startswith("file://") and "context-windows.md" in found[0].url


async def test_a_provider_answering_html_is_refused_with_a_hint(searxng: SearchServer):
    async with httpx.AsyncClient() as http:  # SearXNG without its JSON format answers 403 to format=json
        assert (await http.get(f"{searxng.url}/search", params={"q": "x"})).status_code == 403


@pytest.mark.one_store
async def test_the_demo_model_searches_the_docs_and_cites_them(temporal_address: str, backend: ScriptedBackend, store):  # noqa: ANN001 - the store fixture
    """What a newcomer sees with `durable-responses dev` and nothing set up."""
    from demo.backend import DEMO_BASE_URL

    async with running_stack(temporal_address, backend, store, inference_base_url=DEMO_BASE_URL) as demo:
        async with demo.sdk(timeout=60) as sdk:
            response = await sdk.responses.create(
                model="demo/echo", tools=SEARCH, input='web search "compaction context window"'
            )
    assert [item.type for item in response.output] == ["web_search_call", "message"]
    assert response.output[0].action.query == "compaction context window"
    text = response.output[1].content[0]
    assert text.text.startswith("I searched the web and found:")
    assert text.annotations and all(a.url.startswith("file://") for a in text.annotations)


async def test_long_results_travel_parked_and_reach_the_model_whole(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, searxng: SearchServer, model: str, search_stack: Stack
):
    long_results = [{"url": f"https://example.com/{'q' * 2000}", "title": "too long a URL"}] + [
        {"url": f"https://example.com/{index}/{'p' * 900}", "title": "t" * 900, "content": "é" * 1000}
        for index in range(8)
    ]
    searxng.answer_next(json.dumps({"results": long_results}).encode())
    searching(model, backend, query="long")
    response = await sdk.responses.create(
        model=model, input="search", tools=[{"type": "web_search", "search_context_size": "high"}]
    )
    assert response.status == "completed" and response.output[0].status == "completed"
    told = [m for m in backend.requests(model)[1]["messages"] if m["role"] == "tool"][0]["content"]
    assert told.count("https://example.com/") == 8 and len(told.encode()) > 16 * 1024
    assert "too long a URL" not in told
    handle = search_stack.client.get_workflow_handle(response.id)
    await handle.result()
    history = await handle.fetch_history()
    assert max(event.ByteSize() for event in history.events) < 16 * 1024


any_json = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20)),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(["results", "web", "url", "title", "content", "description", "x"]), children, max_size=4
        )
    ),
    max_leaves=15,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.one_of(any_json.map(lambda value: json.dumps(value).encode()), st.binary(max_size=64)),
    adapter=st.sampled_from(["searxng", "tavily", "brave"]),
)
def test_whatever_a_provider_answers_an_adapter_gives_results_or_a_refusal(
    searxng: SearchServer, body: bytes, adapter: str
):
    provider = {
        "searxng": SearxngProvider(searxng.url, LOCAL),
        "tavily": TavilyProvider(searxng.url, "", LOCAL),
        "brave": BraveProvider(searxng.url, "", LOCAL),
    }[adapter]
    searxng.answer_next(body)
    try:
        found = asyncio.run(provider.search(SearchQuery("anything")))
    except SearchRefusedError:
        return
    assert all(isinstance(result.url, str) and isinstance(result.title, str) for result in found)


@pytest.mark.one_store
async def test_the_search_provider_has_an_allowlist_of_its_own(
    temporal_address: str, backend: ScriptedBackend, searxng: SearchServer, model: str, store: EmptyStore
):
    """An operator's private SearXNG once had to be in EGRESS_ALLOWLIST, where every tenant's
    MCP URLs and webhooks could reach it too: now web search may reach its own provider's host,
    and nothing else may because of it."""
    async with (
        running_stack(
            temporal_address,
            backend,
            store,
            web_search_provider="searxng",
            web_search_url=searxng.url,
            egress_allowlist="none",
        ) as stack,
        stack.sdk(timeout=60) as client,
    ):
        searching(model, backend)
        response = await client.responses.create(model=model, input="What is durable execution?", tools=SEARCH)
        assert response.output[0].type == "web_search_call" and response.output[0].status == "completed"
        with pytest.raises(openai.BadRequestError) as refused:
            await client.responses.create(
                model=model,
                input="hi",
                tools=[
                    {
                        "type": "mcp",
                        "server_label": "x",
                        "server_url": f"{searxng.url}/mcp",
                        "require_approval": "never",
                    }
                ],
            )
        assert refused.value.body["param"].startswith("tools")
