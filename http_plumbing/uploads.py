"""A file upload as the `openai` SDK sends one (multipart/form-data, one `file` and a few
fields), streamed: the multipart parser spools the file to disk as it arrives (never more
than a megabyte of it in memory), the body is refused as soon as it is longer than a file may
be, and the file goes into the store a part at a time (`Upload.pieces`). The Files API
(`api/files.py`) and a container's files (`api/containers.py`) both take them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Collection
from dataclasses import dataclass

from starlette.datastructures import FormData, UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import Request

from file_search.limits import LIMITS
from http_plumbing.params import limits
from models.errors import InvalidRequestError, PayloadTooLargeError, RequestTimeoutError
from store.files import PART_BYTES

UPLOAD_TIMEOUT_FACTOR = 10
"""An upload may take this many times the body timeout (`BODY_TIMEOUT_SECONDS`) to arrive."""
MAX_FILENAME_CHARS = 512
MULTIPART_OVERHEAD_BYTES = 64 * 1024
"""What an upload's body may hold besides the file (boundaries, headers, the other fields)."""


def too_large() -> PayloadTooLargeError:
    return PayloadTooLargeError(
        f"Files may be at most {LIMITS.max_file_bytes // (1024 * 1024)} MiB here.", param="file", code="file_too_large"
    )


def is_multipart(request: Request) -> bool:
    return request.headers.get("content-type", "").lower().startswith("multipart/form-data")


@dataclass
class Upload:
    """The uploaded file, and the form's other fields."""

    file: UploadFile
    form: FormData

    @property
    def filename(self) -> str:
        name = (self.file.filename or "").replace("\\", "/").rsplit("/", 1)[-1]
        if not name or len(name) > MAX_FILENAME_CHARS or not name.isprintable():
            raise InvalidRequestError(
                f"Invalid 'file': its name must be 1 to {MAX_FILENAME_CHARS} printable characters.",
                param="file",
                code="invalid_value",
            )
        return name

    async def pieces(self) -> AsyncIterator[bytes]:
        """The file's bytes, a store part at a time."""
        await self.file.seek(0)
        size = 0
        while piece := await self.file.read(PART_BYTES):
            size += len(piece)
            if size > LIMITS.max_file_bytes:
                raise too_large()
            yield piece

    async def close(self) -> None:
        await self.form.close()


async def _body(request: Request) -> AsyncGenerator[bytes, None]:
    """The request's body as it arrives, refused once it is longer than a file may be."""
    declared = request.headers.get("content-length", "")
    most = LIMITS.max_file_bytes + MULTIPART_OVERHEAD_BYTES
    if declared.isdigit() and int(declared) > most:
        raise too_large()
    size = 0
    async for piece in request.stream():
        size += len(piece)
        if size > most:
            raise too_large()
        yield piece


async def upload_of(request: Request, fields: Collection[str], what: str) -> Upload:
    """The request's `file` and its other `fields` (any other is refused); `what` says what the
    upload must hold, for the refusal of one that is not multipart."""
    if not is_multipart(request):
        raise InvalidRequestError(f"Uploads are multipart/form-data, with {what}.", code="invalid_content_type")
    timeout = limits(request).body_timeout_seconds * UPLOAD_TIMEOUT_FACTOR
    try:
        async with asyncio.timeout(timeout):
            form = await MultiPartParser(request.headers, _body(request), max_files=1, max_fields=8).parse()
    except MultiPartException as error:
        raise InvalidRequestError(f"The upload could not be read: {error.message}", code="invalid_value") from None
    except TimeoutError:
        raise RequestTimeoutError(f"The upload did not arrive within {timeout:g} s.", code="request_timeout") from None
    unknown = sorted(set(form.keys()) - {"file", *fields})
    upload = form.get("file")
    if unknown or not isinstance(upload, UploadFile):
        await form.close()
        if unknown:
            raise InvalidRequestError(f"Unknown parameter: '{unknown[0]}'.", param=unknown[0], code="unknown_parameter")
        raise InvalidRequestError(
            "Missing required parameter: 'file'.", param="file", code="missing_required_parameter"
        )
    return Upload(upload, form)
