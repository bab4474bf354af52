"""Route handlers of OpenAI's Files API (`/v1/files`): upload (multipart, as the `openai`
SDK's `files.create` sends it), list, retrieve, download and delete, each in the key's
project. A file is at most `IngestionLimits.max_file_bytes`; its name is kept (at most 512
characters, no control characters).

An upload streams through: the multipart parser spools the file to disk as it arrives (never
more than a megabyte of it in memory), and it goes into the store a part at a time
(`store/files.py`); a download streams out the same way. The project's quotas of files and
bytes are checked as the file's row is written.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.responses import Response as HttpResponse

from api.params import limits, list_page, page_params, plausible_id, principal, project_quotas, repository
from models.errors import InvalidRequestError, NotFoundError, PayloadTooLargeError, RequestTimeoutError
from models.ids import new_id
from retrieval.limits import LIMITS
from store.files import PART_BYTES, FileRow

PURPOSES = ("assistants", "batch", "fine-tune", "vision", "user_data", "evals")
UPLOAD_TIMEOUT_FACTOR = 10
"""An upload may take this many times the body timeout (`BODY_TIMEOUT_SECONDS`) to arrive."""
MAX_FILENAME_CHARS = 512
MULTIPART_OVERHEAD_BYTES = 64 * 1024
"""What an upload's body may hold besides the file (boundaries, headers, the purpose)."""


def file_not_found(file_id: str, param: str | None = None) -> NotFoundError:
    return NotFoundError(f"No such File object: {file_id}", param=param)


def _too_large() -> PayloadTooLargeError:
    return PayloadTooLargeError(
        f"Files may be at most {LIMITS.max_file_bytes // (1024 * 1024)} MiB here.", param="file", code="file_too_large"
    )


async def _body(request: Request) -> AsyncIterator[bytes]:
    """The request's body as it arrives, refused once it is longer than a file may be."""
    declared = request.headers.get("content-length", "")
    most = LIMITS.max_file_bytes + MULTIPART_OVERHEAD_BYTES
    if declared.isdigit() and int(declared) > most:
        raise _too_large()
    size = 0
    async for piece in request.stream():
        size += len(piece)
        if size > most:
            raise _too_large()
        yield piece


async def _fields(request: Request) -> tuple[UploadFile, str]:
    content_type = request.headers.get("content-type", "")
    if not content_type.lower().startswith("multipart/form-data"):
        raise InvalidRequestError(
            "Uploads are multipart/form-data, with a `file` and a `purpose`.", code="invalid_content_type"
        )
    timeout = limits(request).body_timeout_seconds * UPLOAD_TIMEOUT_FACTOR
    try:
        async with asyncio.timeout(timeout):
            form = await MultiPartParser(request.headers, _body(request), max_files=1, max_fields=8).parse()
    except MultiPartException as error:
        raise InvalidRequestError(f"The upload could not be read: {error.message}", code="invalid_value") from None
    except TimeoutError:
        raise RequestTimeoutError(f"The upload did not arrive within {timeout:g} s.", code="request_timeout") from None
    unknown = sorted(set(form.keys()) - {"file", "purpose"})
    upload, purpose = form.get("file"), form.get("purpose")
    try:
        if unknown:
            raise InvalidRequestError(f"Unknown parameter: '{unknown[0]}'.", param=unknown[0], code="unknown_parameter")
        if not isinstance(upload, UploadFile):
            raise InvalidRequestError(
                "Missing required parameter: 'file'.", param="file", code="missing_required_parameter"
            )
        if not isinstance(purpose, str) or purpose not in PURPOSES:
            raise InvalidRequestError(
                f"Invalid 'purpose': expected one of {', '.join(PURPOSES)}.", param="purpose", code="invalid_value"
            )
    except InvalidRequestError:
        await form.close()
        raise
    return upload, purpose


def _filename(upload: UploadFile) -> str:
    name = (upload.filename or "").replace("\\", "/").rsplit("/", 1)[-1]
    if not name or len(name) > MAX_FILENAME_CHARS or not name.isprintable():
        raise InvalidRequestError(
            f"Invalid 'file': its name must be 1 to {MAX_FILENAME_CHARS} printable characters.",
            param="file",
            code="invalid_value",
        )
    return name


async def _pieces(upload: UploadFile) -> AsyncIterator[bytes]:
    await upload.seek(0)
    size = 0
    while piece := await upload.read(PART_BYTES):
        size += len(piece)
        if size > LIMITS.max_file_bytes:
            raise _too_large()
        yield piece


async def create_file(request: Request) -> HttpResponse:
    upload, purpose = await _fields(request)
    files = repository(request).files
    file_id = new_id("file")
    try:
        filename = _filename(upload)
        size = await files.write_parts(file_id, _pieces(upload))
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
