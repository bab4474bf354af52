"""`file_search` over the user's own documents, through the `openai` SDK (strict): the Files
API, vector stores ingesting the files as durable workflows, `vector_stores.search`, and the
`file_search` tool in a response, with its items, events and citations; on both stores."""

from __future__ import annotations

import asyncio
import json
import time

import openai
import pytest

from models.ingestion import ingestion_workflow_id
from tests.support.documents import ASTRONOMY_LINES, BAKING, GARDENING, pdf_with_text
from tests.support.histories import keep_recording, replayer
from tests.support.openresponses import validate_event, validate_response
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import Stack

ANSWER = "Water tomatoes deeply twice a week [1]."


async def upload_three(sdk: openai.AsyncOpenAI) -> list[str]:
    files = [
        ("tomatoes.md", GARDENING.encode()),
        ("bread.html", BAKING.encode()),
        ("andromeda.pdf", pdf_with_text(ASTRONOMY_LINES)),
    ]
    return [(await sdk.files.create(file=(name, content), purpose="assistants")).id for name, content in files]


async def completed_store(sdk: openai.AsyncOpenAI, file_ids: list[str], **options: object) -> str:
    store = await sdk.vector_stores.create(name="docs", file_ids=file_ids, **options)
    deadline = time.monotonic() + 60
    while store.status != "completed":
        assert time.monotonic() < deadline, f"the vector store is still {store.status}: {store.file_counts}"
        await asyncio.sleep(0.2)
        store = await sdk.vector_stores.retrieve(store.id)
    assert store.file_counts.completed == len(file_ids) and store.file_counts.failed == 0
    return store.id


async def test_files_go_into_a_vector_store_and_a_search_ranks_the_right_chunk_first(stack: Stack, sdk):
    file_ids = await upload_three(sdk)
    listed = await sdk.files.list(purpose="assistants", limit=100)
    assert set(file_ids) <= {file.id for file in listed.data}
    pdf = await sdk.files.retrieve(file_ids[2])
    assert pdf.filename == "andromeda.pdf" and pdf.bytes > 0 and pdf.status == "processed"
    assert (await sdk.files.content(file_ids[0])).content == GARDENING.encode()
    store_id = await completed_store(sdk, file_ids)

    for query, expected in (
        ("how often should I water tomatoes", file_ids[0]),
        ("feeding a sourdough starter", file_ids[1]),
        ("how far away is the Andromeda galaxy", file_ids[2]),
    ):
        page = await sdk.vector_stores.search(store_id, query=query)
        assert page.data[0].file_id == expected, (query, [(hit.filename, hit.score) for hit in page.data])
        assert 0 < page.data[0].score <= 1
    page = await sdk.vector_stores.search(store_id, query="Andromeda galaxy", max_num_results=1)
    assert len(page.data) == 1 and "million light years" in page.data[0].content[0].text
    assert "<script>" not in (await sdk.vector_stores.search(store_id, query="sourdough")).data[0].content[0].text

    entries = await sdk.vector_stores.files.list(store_id)
    assert {entry.id for entry in entries.data} == set(file_ids)
    ingestion = stack.client.get_workflow_handle(ingestion_workflow_id(store_id, file_ids[2]))
    assert await ingestion.result() == "completed"
    assert (await replayer().replay_workflow(await ingestion.fetch_history())).replay_failure is None
    await keep_recording("file_ingestion", stack.client, ingestion.id)
    assert all(entry.status == "completed" and entry.usage_bytes > 0 for entry in entries.data)
    assert entries.data[0].chunking_strategy.type == "static"


async def test_upload_and_poll_attributes_and_filters(stack: Stack, sdk):
    store = await sdk.vector_stores.create(name="filtered")
    garden = await sdk.files.create(file=("garden.md", GARDENING.encode()), purpose="user_data")
    entry = await sdk.vector_stores.files.create_and_poll(
        vector_store_id=store.id, file_id=garden.id, attributes={"topic": "garden", "year": 2024}
    )
    assert entry.status == "completed" and entry.attributes == {"topic": "garden", "year": 2024}
    uploaded = await sdk.vector_stores.files.upload_and_poll(
        vector_store_id=store.id, file=("bread.html", BAKING.encode())
    )
    assert uploaded.status == "completed"
    await sdk.vector_stores.files.update(uploaded.id, vector_store_id=store.id, attributes={"topic": "kitchen"})

    only_kitchen = await sdk.vector_stores.search(
        store.id, query="water the plants", filters={"type": "eq", "key": "topic", "value": "kitchen"}
    )
    assert {hit.file_id for hit in only_kitchen.data} == {uploaded.id}
    recent = await sdk.vector_stores.search(
        store.id,
        query="tomatoes",
        filters={
            "type": "and",
            "filters": [
                {"type": "gte", "key": "year", "value": 2020},
                {"type": "ne", "key": "topic", "value": "kitchen"},
            ],
        },
    )
    assert [hit.file_id for hit in recent.data] == [garden.id]
    strict = await sdk.vector_stores.search(store.id, query="tomatoes", ranking_options={"score_threshold": 0.99})
    assert strict.data == []

    await sdk.vector_stores.files.delete(garden.id, vector_store_id=store.id)
    assert {hit.file_id for hit in (await sdk.vector_stores.search(store.id, query="tomatoes")).data} <= {uploaded.id}
    await sdk.files.delete(uploaded.id)
    assert (await sdk.vector_stores.search(store.id, query="sourdough")).data == []
    deleted = await sdk.vector_stores.delete(store.id)
    assert deleted.deleted
    with pytest.raises(openai.NotFoundError):
        await sdk.vector_stores.retrieve(store.id)


async def test_a_response_searches_the_files_and_cites_them(stack: Stack, sdk, backend: ScriptedBackend, model: str):
    store_id = await completed_store(sdk, await upload_three(sdk))
    backend.script(model, [Reply(tool_calls=[("file_search", {"query": "watering tomatoes"})]), Reply(text=ANSWER)])
    response = await sdk.responses.create(
        model=model,
        input="How often do I water tomatoes?",
        tools=[{"type": "file_search", "vector_store_ids": [store_id]}],
        include=["file_search_call.results"],
    )
    assert response.status == "completed"
    async with stack.http() as http:  # the OpenResponses schema has no file_search_call: the rest must pass
        shown = (await http.get(f"/v1/responses/{response.id}")).json()
    validate_response(shown | {"output": [item for item in shown["output"] if item["type"] != "file_search_call"]})
    call, message = response.output
    assert call.type == "file_search_call" and call.status == "completed"
    assert call.queries == ["watering tomatoes"]
    assert call.results and call.results[0].filename == "tomatoes.md" and "twice a week" in call.results[0].text
    offered = backend.requests(model)[0]["tools"]
    assert [tool["function"]["name"] for tool in offered] == ["file_search"]
    shown = [m for m in backend.requests(model)[1]["messages"] if m["role"] == "tool"][0]["content"]
    assert shown.startswith("File search results for 'watering tomatoes'") and "[1] tomatoes.md" in shown
    text = message.content[0]
    assert text.text == ANSWER
    citation = text.annotations[0]
    assert citation.type == "file_citation" and citation.filename == "tomatoes.md"
    assert citation.file_id == call.results[0].file_id and citation.index == ANSWER.index("[1]")
    handle = stack.client.get_workflow_handle(response.id)
    await handle.result()
    assert (await replayer().replay_workflow(await handle.fetch_history())).replay_failure is None
    await keep_recording("file_search", stack.client, response.id)

    backend.script(model, [Reply(tool_calls=[("file_search", {"query": "sourdough"})]), Reply(text="Bake it.")])
    plain = await sdk.responses.create(
        model=model, input="Bread?", tools=[{"type": "file_search", "vector_store_ids": [store_id]}]
    )
    assert plain.output[0].type == "file_search_call" and plain.output[0].results is None  # not included


async def test_a_streamed_file_search_sends_its_events(stack: Stack, sdk, backend: ScriptedBackend, model: str):
    store_id = await completed_store(sdk, await upload_three(sdk))
    backend.script(
        model,
        [Reply(tool_calls=[("file_search", {"query": "Andromeda"})]), Reply(text="About 2.5 million light years [1].")],
    )
    events = []
    async with sdk.responses.stream(
        model=model, input="How far is Andromeda?", tools=[{"type": "file_search", "vector_store_ids": [store_id]}]
    ) as stream:
        async for event in stream:
            if (
                "file_search" not in event.type
                and getattr(getattr(event, "item", None), "type", "") != "file_search_call"
                and event.type not in ("response.completed", "response.in_progress", "response.created")
            ):
                validate_event(event.model_dump(mode="json"))
            events.append(event)
    kinds = [event.type for event in events]
    searching = [kind for kind in kinds if kind.startswith("response.file_search_call.")]
    assert searching == [
        "response.file_search_call.in_progress",
        "response.file_search_call.searching",
        "response.file_search_call.completed",
    ]
    final = events[-1].response
    assert final.output[0].type == "file_search_call" and final.output[0].status == "completed"
    assert final.output[1].content[0].annotations[0].filename == "andromeda.pdf"


async def test_a_file_that_cannot_be_read_fails_with_its_reason(stack: Stack, sdk):
    image = await sdk.files.create(file=("photo.png", b"\x89PNG\r\n\x1a\n" + bytes(64)), purpose="assistants")
    broken = await sdk.files.create(file=("broken.pdf", b"%PDF-1.4 not really"), purpose="assistants")
    store = await sdk.vector_stores.create(file_ids=[image.id, broken.id])
    deadline = time.monotonic() + 60
    while store.status != "completed":
        assert time.monotonic() < deadline
        await asyncio.sleep(0.2)
        store = await sdk.vector_stores.retrieve(store.id)
    assert store.file_counts.failed == 2 and store.file_counts.completed == 0
    photo = await sdk.vector_stores.files.retrieve(image.id, vector_store_id=store.id)
    assert photo.status == "failed" and photo.last_error.code == "unsupported_file"
    pdf = await sdk.vector_stores.files.retrieve(broken.id, vector_store_id=store.id)
    assert pdf.status == "failed" and pdf.last_error.code == "invalid_file"


async def test_a_batch_adds_files_and_can_be_cancelled(stack: Stack, sdk, backend: ScriptedBackend):
    store = await sdk.vector_stores.create(name="batches")
    ids = [
        (
            await sdk.files.create(
                file=(f"note{n}.txt", f"note number {n} about comets".encode()), purpose="assistants"
            )
        ).id
        for n in range(3)
    ]
    batch = await sdk.vector_stores.file_batches.create_and_poll(
        vector_store_id=store.id,
        file_ids=ids,
        chunking_strategy={"type": "static", "static": {"max_chunk_size_tokens": 200, "chunk_overlap_tokens": 50}},
    )
    assert batch.status == "completed" and batch.file_counts.completed == 3
    listed = await sdk.vector_stores.file_batches.list_files(batch.id, vector_store_id=store.id)
    assert {entry.id for entry in listed.data} == set(ids)
    assert listed.data[0].chunking_strategy.static.max_chunk_size_tokens == 200

    cancelled = await sdk.vector_stores.file_batches.cancel(batch.id, vector_store_id=store.id)
    assert cancelled.status == "completed"  # nothing was left to cancel


async def test_bad_requests_name_their_parameter_and_leave_nothing(stack: Stack):
    async with stack.http() as http:
        checks = [
            ("POST", "/v1/vector_stores", {"file_ids": ["file_missing"]}, 404, "file_ids[0]"),
            (
                "POST",
                "/v1/vector_stores",
                {
                    "chunking_strategy": {
                        "type": "static",
                        "static": {"max_chunk_size_tokens": 100, "chunk_overlap_tokens": 80},
                    }
                },
                400,
                "chunking_strategy.static",
            ),
            ("POST", "/v1/vector_stores", {"name": "x" * 300}, 400, "name"),
            (
                "POST",
                "/v1/vector_stores",
                {"expires_after": {"anchor": "created_at", "days": 1}},
                400,
                "expires_after.anchor",
            ),
            ("GET", "/v1/vector_stores/vs_missing", None, 404, "vector_store_id"),
            ("GET", "/v1/files/file_missing", None, 404, "file_id"),
            ("GET", "/v1/files?limit=0", None, 400, "limit"),
            ("GET", "/v1/files?purpose=nonsense", None, 400, "purpose"),
        ]
        before = (await http.get("/v1/vector_stores", params={"limit": 100})).json()["data"]
        for method, path, body, status, param in checks:
            answer = await http.request(method, path, json=body)
            assert answer.status_code == status, (path, body, answer.text)
            assert answer.json()["error"]["param"] == param, (path, body, answer.json())
        after = (await http.get("/v1/vector_stores", params={"limit": 100})).json()["data"]
        assert len(after) == len(before)

        no_file = await http.post("/v1/files", files={"purpose": (None, "assistants")})
        assert no_file.status_code == 400 and no_file.json()["error"]["param"] == "file"
        bad_purpose = await http.post("/v1/files", files={"file": ("a.txt", b"x"), "purpose": (None, "fun")})
        assert bad_purpose.status_code == 400 and bad_purpose.json()["error"]["param"] == "purpose"
        not_multipart = await http.post("/v1/files", json={"file": "x"})
        assert not_multipart.status_code == 400
        store = (await http.post("/v1/vector_stores", json={})).json()
        search = await http.post(f"/v1/vector_stores/{store['id']}/search", json={"query": "x", "max_num_results": 99})
        assert search.status_code == 400 and search.json()["error"]["param"] == "max_num_results"
        search = await http.post(
            f"/v1/vector_stores/{store['id']}/search", json={"query": "x", "filters": {"type": "eq", "key": "k"}}
        )
        assert search.status_code == 400 and search.json()["error"]["param"].startswith("filters")


async def test_a_file_too_large_is_refused_before_it_is_read(stack: Stack):
    """A body that says it is 64 MiB is refused at once, before any of it is read."""
    host, port = stack.base_url.removeprefix("http://").removesuffix("/v1").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(
        b"POST /v1/files HTTP/1.1\r\nhost: %s\r\ncontent-type: multipart/form-data; boundary=b\r\n"
        b"content-length: %d\r\n\r\n--b\r\n" % (host.encode(), 64 * 1024 * 1024)
    )
    await writer.drain()
    status = await asyncio.wait_for(reader.readline(), 10)
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    length = int(
        next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
    )
    body = json.loads(await asyncio.wait_for(reader.readexactly(length), 10))
    writer.close()
    assert (
        status.split()[1] == b"413" and body["error"]["param"] == "file" and body["error"]["code"] == "file_too_large"
    )
