"""Route handlers of OpenAI's Files API (`/v1/files`): upload (multipart, as the `openai`
SDK's `files.create` sends it), list, retrieve, download and delete, each in the key's
project. A file is at most `MAX_FILE_BYTES`; its name is kept (at most 512 characters, no
control characters)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.responses import Response as HttpResponse

from api.body import read_bounded
from api.params import limits, list_page, page_params, plausible_id, principal, repository
from models.errors import InvalidRequestError, NotFoundError, PayloadTooLargeError
from models.ids import new_id
from store.files import FileRow

MAX_FILE_BYTES = 32 * 1024 * 1024
PURPOSES = ("assistants", "batch", "fine-tune", "vision", "user_data", "evals")
UPLOAD_TIMEOUT_FACTOR = 10
"""An upload may take this many times the body timeout (`BODY_TIMEOUT_SECONDS`) to arrive."""
MAX_FILENAME_CHARS = 512


def file_not_found(file_id: str, param: str | None = None) -> NotFoundError:
    return NotFoundError(f"No such File object: {file_id}", param=param)


async def _fields(request: Request) -> tuple[UploadFile, str]:
    content_type = request.headers.get("content-type", "")
    if not content_type.lower().startswith("multipart/form-data"):
        raise InvalidRequestError(
            "Uploads are multipart/form-data, with a `file` and a `purpose`.", code="invalid_content_type"
        )
    too_large = PayloadTooLargeError(
        f"Files may be at most {MAX_FILE_BYTES // (1024 * 1024)} MiB here.", param="file", code="file_too_large"
    )
    body = await read_bounded(
        request, MAX_FILE_BYTES + 64 * 1024, limits(request).body_timeout_seconds * UPLOAD_TIMEOUT_FACTOR, too_large
    )

    async def once() -> AsyncIterator[bytes]:
        yield body

    try:
        form = await MultiPartParser(request.headers, once(), max_files=1, max_fields=8).parse()
    except MultiPartException as error:
        raise InvalidRequestError(f"The upload could not be read: {error.message}", code="invalid_value") from None
    unknown = sorted(set(form.keys()) - {"file", "purpose"})
    if unknown:
        raise InvalidRequestError(f"Unknown parameter: '{unknown[0]}'.", param=unknown[0], code="unknown_parameter")
    upload, purpose = form.get("file"), form.get("purpose")
    if not isinstance(upload, UploadFile):
        raise InvalidRequestError(
            "Missing required parameter: 'file'.", param="file", code="missing_required_parameter"
        )
    if not isinstance(purpose, str) or purpose not in PURPOSES:
        raise InvalidRequestError(
            f"Invalid 'purpose': expected one of {', '.join(PURPOSES)}.", param="purpose", code="invalid_value"
        )
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


async def create_file(request: Request) -> HttpResponse:
    upload, purpose = await _fields(request)
    filename = _filename(upload)
    content = await upload.read()
    if len(content) > MAX_FILE_BYTES:
        raise PayloadTooLargeError(
            f"Files may be at most {MAX_FILE_BYTES // (1024 * 1024)} MiB here.", param="file", code="file_too_large"
        )
    row = FileRow(new_id("file"), principal(request).project, filename, purpose, len(content), int(time.time()))
    await repository(request).files.create(row, content)
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
    found = await _file(request)
    content = await repository(request).files.content(found.id)
    if content is None:
        raise file_not_found(found.id, "file_id")
    return HttpResponse(content, media_type="application/octet-stream")


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
    found = await _file(request)
    await repository(request).files.delete(found.id, found.project)
    return JSONResponse({"id": found.id, "object": "file", "deleted": True})
