"""Route handlers of OpenAI's Files API (`/v1/files`): upload (multipart, as the `openai`
SDK's `files.create` sends it, streamed: `http_plumbing/uploads.py`), list, retrieve, download and
delete, each in the key's project. A file is at most `IngestionLimits.max_file_bytes`; its
name is kept (at most 512 characters, no control characters). A download streams out a part
at a time; the project's quotas of files and bytes are checked as the file's row is written.
"""

from __future__ import annotations

import asyncio
import time

from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.responses import Response as HttpResponse

from http_plumbing.params import list_page, page_params, plausible_id, principal, project_quotas, repository
from http_plumbing.uploads import upload_of
from models.errors import InvalidRequestError
from models.ids import new_id
from response_service.containers import file_not_found
from store.files import FileRow

PURPOSES = ("assistants", "batch", "fine-tune", "vision", "user_data", "evals")


async def create_file(request: Request) -> HttpResponse:
    upload = await upload_of(request, {"purpose"}, "a `file` and a `purpose`")
    files = repository(request).files
    file_id = new_id("file")
    try:
        purpose = upload.form.get("purpose")
        if not isinstance(purpose, str) or purpose not in PURPOSES:
            raise InvalidRequestError(
                f"Invalid 'purpose': expected one of {', '.join(PURPOSES)}.", param="purpose", code="invalid_value"
            )
        filename = upload.filename
        size = await files.write_parts(file_id, upload.pieces())
        row = FileRow(file_id, principal(request).project, filename, purpose, size, int(time.time()))
        await files.create(row, project_quotas(request))
    except BaseException:
        await asyncio.shield(files.drop_parts(file_id))
        raise
    finally:
        await upload.close()
    return JSONResponse(row.to_wire())


async def _file(request: Request) -> FileRow:
    file_id = request.path_params["file_id"]
    found = await repository(request).files.get(file_id, principal(request).project) if plausible_id(file_id) else None
    if found is None:
        raise file_not_found(file_id, "file_id")
    return found


async def retrieve_file(request: Request) -> HttpResponse:
    return JSONResponse((await _file(request)).to_wire())


async def file_content(request: Request) -> HttpResponse:
    """The file's bytes, streamed a part at a time."""
    found = await _file(request)
    return StreamingResponse(
        repository(request).files.parts(found.id),
        media_type="application/octet-stream",
        headers={"content-length": str(found.bytes)},
    )


async def list_files(request: Request) -> HttpResponse:
    page = page_params(request, default_order="desc")
    purpose = request.query_params.get("purpose")
    if purpose is not None and purpose not in PURPOSES:
        raise InvalidRequestError(
            f"Invalid 'purpose': expected one of {', '.join(PURPOSES)}.", param="purpose", code="invalid_value"
        )
    try:
        rows, more = await repository(request).files.page(
            principal(request).project, purpose, after=page.after, limit=page.limit, order=page.order
        )
    except LookupError as missing:
        raise InvalidRequestError(f"No file with id '{missing}'.", param="after") from None
    return list_page([row.to_wire() for row in rows], more)


async def delete_file(request: Request) -> HttpResponse:
    """The file goes, with its chunks in every vector store; its ingestions still running are
    stopped (one that writes a last batch after this finds its row gone and writes nothing)."""
    found = await _file(request)
    running = await repository(request).files.delete(found.id, found.project)
    for vector_store_id in running or []:
        await request.app.state.ingestions.cancel(vector_store_id, [found.id])
    return JSONResponse({"id": found.id, "object": "file", "deleted": True})
