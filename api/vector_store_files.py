"""Route handlers of a vector store's files and file batches
(`/v1/vector_stores/{id}/files`, `/v1/vector_stores/{id}/file_batches`).

Adding a file starts its ingestion; the `vector_store.file` says how it went (`status`,
`last_error`). A batch is the files it added; its status and `file_counts` are counted from
theirs, and cancelling it cancels those still in progress.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.responses import Response as HttpResponse

from api.vector_stores import files_to_add, ingest, parsed, vector_store
from http_plumbing.params import list_page, page_params, plausible_id, project_quotas, repository
from models.errors import InvalidRequestError, NotFoundError
from models.ids import new_id
from models.vector_stores import CreateFileBatch, CreateVectorStoreFile, UpdateVectorStoreFile, chunking_as_stored
from store.vector_store_rows import STATUSES, BatchRow, NewFile, VectorStoreFileRow

CONTENT_PAGE_CHARS = 1024 * 1024


def _status_filter(request: Request) -> str | None:
    status = request.query_params.get("filter")
    if status is not None and status not in STATUSES:
        raise InvalidRequestError(
            f"Invalid 'filter': expected one of {', '.join(STATUSES)}.", param="filter", code="invalid_value"
        )
    return status


async def _entry(request: Request) -> VectorStoreFileRow:
    store = await vector_store(request)
    file_id = request.path_params["file_id"]
    found = await repository(request).vector_stores.file(store.id, file_id) if plausible_id(file_id) else None
    if found is None:
        raise NotFoundError(f"No file with id '{file_id}' in vector store '{store.id}'.", param="file_id")
    return found


async def create_file(request: Request) -> HttpResponse:
    store = await vector_store(request)
    body = await parsed(CreateVectorStoreFile, request)
    entry = NewFile(body.file_id, body.attributes or {}, chunking_as_stored(body.chunking_strategy))
    await files_to_add(request, [entry], ["file_id"])
    added = await repository(request).vector_stores.add_files(
        store.id, [entry], project_quotas(request), param="file_id"
    )
    await ingest(request, store, added)
    found = await repository(request).vector_stores.file(store.id, body.file_id)
    return JSONResponse((found or added[0]).to_wire())


async def retrieve_file(request: Request) -> HttpResponse:
    return JSONResponse((await _entry(request)).to_wire())


async def update_file(request: Request) -> HttpResponse:
    entry = await _entry(request)
    body = await parsed(UpdateVectorStoreFile, request)
    await repository(request).vector_stores.update_attributes(
        entry.vector_store_id, entry.file_id, body.attributes or {}
    )
    return JSONResponse((await _entry(request)).to_wire())


async def delete_file(request: Request) -> HttpResponse:
    entry = await _entry(request)
    await repository(request).vector_stores.remove_file(entry.vector_store_id, entry.file_id)
    if entry.status == "in_progress":
        await request.app.state.ingestions.cancel(entry.vector_store_id, [entry.file_id])
    return JSONResponse({"id": entry.file_id, "object": "vector_store.file.deleted", "deleted": True})


def _page_token(request: Request) -> int:
    """Where a page of a file's content starts: `?page=` with the `next_page` of the one before."""
    token = request.query_params.get("page")
    if token is None:
        return -1
    if not token.isdigit() or len(token) > 12:
        raise InvalidRequestError("Invalid 'page': expected the `next_page` of an earlier page.", param="page")
    return int(token)


async def file_content(request: Request) -> HttpResponse:
    """The file's chunks, a page of at most `CONTENT_PAGE_CHARS` characters at a time (a
    large file's content is not read, nor sent, in one piece); `next_page` goes in `?page=`."""
    entry = await _entry(request)
    chunks, more = await repository(request).chunks.texts_page(
        entry.vector_store_id, entry.file_id, _page_token(request), CONTENT_PAGE_CHARS
    )
    return JSONResponse(
        {
            "object": "vector_store.file_content.page",
            "has_more": more,
            "next_page": str(chunks[-1][0]) if more and chunks else None,
            "data": [{"type": "text", "text": text} for _, text in chunks],
        }
    )


async def list_files(request: Request) -> HttpResponse:
    store = await vector_store(request)
    page = page_params(request, with_before=True)
    try:
        rows, more = await repository(request).vector_stores.files_page(
            store.id,
            status=_status_filter(request),
            batch_id=None,
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )
    except LookupError as missing:
        raise InvalidRequestError(f"No file with id '{missing}' in this vector store.", param="after") from None
    return list_page([row.to_wire() for row in rows], more)


async def _batch(request: Request) -> BatchRow:
    store = await vector_store(request)
    batch_id = request.path_params["batch_id"]
    found = await repository(request).vector_stores.batch(batch_id) if plausible_id(batch_id) else None
    if found is None or found.vector_store_id != store.id:
        raise NotFoundError(f"No file batch with id '{batch_id}' in vector store '{store.id}'.", param="batch_id")
    return found


async def create_batch(request: Request) -> HttpResponse:
    store = await vector_store(request)
    body = await parsed(CreateFileBatch, request)
    listed = "files" if body.files is not None else "file_ids"
    entries = [
        NewFile(each.file_id, each.attributes or {}, chunking_as_stored(each.chunking_strategy))
        for each in body.entries()
    ]
    await files_to_add(request, entries, [f"{listed}[{index}]" for index in range(len(entries))])
    batch_id = new_id("vsfb")
    added = await repository(request).vector_stores.add_files(
        store.id, entries, project_quotas(request), batch_id, param=listed
    )
    await ingest(request, store, added)
    batch = await repository(request).vector_stores.batch(batch_id)
    assert batch is not None
    return JSONResponse(batch.to_wire())


async def retrieve_batch(request: Request) -> HttpResponse:
    return JSONResponse((await _batch(request)).to_wire())


async def cancel_batch(request: Request) -> HttpResponse:
    batch = await _batch(request)
    stopped = await repository(request).vector_stores.cancel_batch(batch.id)
    await request.app.state.ingestions.cancel(batch.vector_store_id, stopped)
    return JSONResponse((await _batch(request)).to_wire())


async def list_batch_files(request: Request) -> HttpResponse:
    batch = await _batch(request)
    page = page_params(request, with_before=True)
    try:
        rows, more = await repository(request).vector_stores.files_page(
            batch.vector_store_id,
            status=_status_filter(request),
            batch_id=batch.id,
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )
    except LookupError as missing:
        raise InvalidRequestError(f"No file with id '{missing}' in this batch.", param="after") from None
    return list_page([row.to_wire() for row in rows], more)
