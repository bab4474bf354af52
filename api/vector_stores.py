"""Route handlers of OpenAI's Vector Stores API: the stores themselves and their `search`
(`/v1/vector_stores`). Their files and file batches are in `api/vector_store_files.py`.

Creating a store with `file_ids` starts each file's ingestion (`api/ingestions.py`); its
status is `in_progress` until every file has left that state. Deleting a store stops the
ingestions still running and removes its chunks.
"""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.responses import Response as HttpResponse

from file_search.library import Library
from file_search.searching import search
from http_plumbing.body import ModelT, read_model
from http_plumbing.params import limits, list_page, page_params, plausible_id, principal, project_quotas, repository
from models.errors import InvalidRequestError, NotFoundError, UnavailableError, UpstreamError
from models.ids import new_id
from models.vector_stores import CreateVectorStore, SearchVectorStore, UpdateVectorStore, chunking_as_stored
from response_service.containers import file_not_found
from store.vector_store_rows import NewFile, VectorStoreFileRow, VectorStoreRow
from telemetry import metrics

MAX_BODY_BYTES = 2 * 1024 * 1024
"""The largest body the Vector Stores API takes: 500 file ids, or a search's filters at their
bounds, fit many times over (`docs/security.md`)."""


async def parsed(model: type[ModelT], request: Request) -> ModelT:
    return await read_model(model, request, limits(request), most=MAX_BODY_BYTES)


def vector_store_not_found(vector_store_id: str, param: str | None = "vector_store_id") -> NotFoundError:
    return NotFoundError(f"Vector store with id '{vector_store_id}' not found.", param=param)


async def vector_store(request: Request) -> VectorStoreRow:
    vector_store_id = request.path_params["vector_store_id"]
    found = (
        await repository(request).vector_stores.get(vector_store_id, principal(request).project)
        if plausible_id(vector_store_id)
        else None
    )
    if found is None:
        raise vector_store_not_found(vector_store_id)
    return found


async def files_to_add(request: Request, entries: list[NewFile], params: list[str]) -> None:
    """Every file named is one of the project's (404 naming, by `params`, the first that is not)."""
    found = await repository(request).files.some([entry.file_id for entry in entries], principal(request).project)
    for entry, param in zip(entries, params, strict=True):
        if entry.file_id not in found:
            raise file_not_found(entry.file_id, param)


async def ingest(request: Request, store: VectorStoreRow, added: list[VectorStoreFileRow]) -> None:
    """Start the ingestion of the files just added (a file the store had already keeps its
    own); if Temporal did not take them, remove them again (and the store, when it was just
    made for them) before answering 503."""
    fresh = [row.file_id for row in added if row.fresh]
    try:
        await request.app.state.ingestions.start(store.id, store.project, store.embedding_model, fresh)
    except Exception:
        for file_id in fresh:
            await repository(request).vector_stores.remove_file(store.id, file_id)
        raise


async def create_vector_store(request: Request) -> HttpResponse:
    body = await parsed(CreateVectorStore, request)
    project = principal(request).project
    entries = [NewFile(file_id, {}, chunking_as_stored(body.chunking_strategy)) for file_id in body.file_ids or []]
    await files_to_add(request, entries, [f"file_ids[{index}]" for index in range(len(entries))])
    now = int(time.time())
    row = VectorStoreRow(
        new_id("vs"),
        project,
        body.name or "",
        body.metadata or {},
        now,
        now,
        body.expires_after.days if body.expires_after else None,
        request.app.state.embedder.model,
    )
    added = await repository(request).vector_stores.create(row, entries, project_quotas(request), param="file_ids")
    try:
        await ingest(request, row, added)
    except Exception:
        await repository(request).vector_stores.delete(row.id)
        raise
    return JSONResponse((await repository(request).vector_stores.get(row.id, project) or row).to_wire())


async def retrieve_vector_store(request: Request) -> HttpResponse:
    return JSONResponse((await vector_store(request)).to_wire())


async def update_vector_store(request: Request) -> HttpResponse:
    store = await vector_store(request)
    body = await parsed(UpdateVectorStore, request)
    changes: dict[str, Any] = {}
    if body.name is not None:
        changes["name"] = body.name
    if body.metadata is not None:
        changes["metadata"] = body.metadata
    if "expires_after" in body.model_fields_set:
        changes["expires_after_days"] = body.expires_after.days if body.expires_after else None
    if changes:
        await repository(request).vector_stores.update(store.id, changes)
    return JSONResponse((await vector_store(request)).to_wire())


async def list_vector_stores(request: Request) -> HttpResponse:
    page = page_params(request, with_before=True)
    try:
        rows, more = await repository(request).vector_stores.page(
            principal(request).project, after=page.after, before=page.before, limit=page.limit, order=page.order
        )
    except LookupError as missing:
        raise InvalidRequestError(f"No vector store with id '{missing}'.", param="after") from None
    return list_page([row.to_wire() for row in rows], more)


async def delete_vector_store(request: Request) -> HttpResponse:
    store = await vector_store(request)
    running = await repository(request).vector_stores.delete(store.id)
    await request.app.state.ingestions.cancel(store.id, running)
    return JSONResponse({"id": store.id, "object": "vector_store.deleted", "deleted": True})


async def search_vector_store(request: Request) -> HttpResponse:
    store = await vector_store(request)
    body = await parsed(SearchVectorStore, request)
    stores = repository(request)
    began = time.perf_counter()
    try:
        hits = await search(
            Library(stores.vector_stores, stores.chunks, stores.files),
            request.app.state.embedder,
            [store],
            body.queries(),
            project=store.project,
            max_num_results=body.max_num_results,
            filters=body.filters,
            ranking_options=body.ranking_options,
        )
    except UpstreamError as error:
        raise UnavailableError(f"The query could not be embedded: {error.message}") from None
    metrics.file_search("api", time.perf_counter() - began)
    return JSONResponse(
        {
            "object": "vector_store.search_results.page",
            "search_query": body.queries(),
            "data": [hit.to_wire() for hit in hits],
            "has_more": False,
            "next_page": None,
        }
    )
