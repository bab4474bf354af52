"""Route handlers of OpenAI's Containers API (`/v1/containers` and their `/files`), each in the
key's project. A container made here lives nowhere yet: the first command that needs it
places it on a worker host (`store/containers.py`); its files are kept in the store, so any
API process serves them. A file uploaded (or copied from `/v1/files`) waits there until the
container's host copies it in, before the next command; what code writes under `/mnt/data`
comes back after each command.
"""

from __future__ import annotations

import asyncio
import time

from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.responses import Response as HttpResponse

from http_plumbing.body import read_model
from http_plumbing.params import limits, list_page, page_params, plausible_id, principal, project_quotas, repository
from http_plumbing.uploads import is_multipart, upload_of
from models.containers import (
    DEFAULT_EXPIRY_MINUTES,
    ContainerFileFromId,
    CreateContainer,
    network_policy_as_stored,
)
from models.errors import InvalidRequestError, NotFoundError
from models.ids import new_id
from response_service.containers import (
    check_container_options,
    container_not_found,
    file_not_found,
    new_container,
)
from sandbox.bubblewrap import DATA_MOUNT
from store.containers import ContainerFileRow, ContainerRow

MAX_BODY_BYTES = 1024 * 1024


async def create_container(request: Request) -> HttpResponse:
    body = await read_model(CreateContainer, request, limits(request), most=MAX_BODY_BYTES)
    await check_container_options(request.app.state.sandbox, body.memory_limit, body.network_policy)
    row = await new_container(
        request,
        name=body.name,
        memory_limit=body.memory_limit,
        minutes=body.expires_after.minutes if body.expires_after else DEFAULT_EXPIRY_MINUTES,
        network_policy=network_policy_as_stored(body.network_policy),
        file_ids=body.file_ids or [],
        param="file_ids",
    )
    return JSONResponse(row.to_wire())


async def container(request: Request) -> ContainerRow:
    container_id = request.path_params["container_id"]
    found = (
        await repository(request).containers.get(container_id, principal(request).project)
        if plausible_id(container_id)
        else None
    )
    if found is None:
        raise container_not_found(container_id)
    return found


async def retrieve_container(request: Request) -> HttpResponse:
    return JSONResponse((await container(request)).to_wire())


async def list_containers(request: Request) -> HttpResponse:
    page = page_params(request)
    name = request.query_params.get("name")
    try:
        rows, more = await repository(request).containers.page(
            principal(request).project, name, after=page.after, limit=page.limit, order=page.order
        )
    except LookupError as missing:
        raise InvalidRequestError(f"No container with id '{missing}'.", param="after") from None
    return list_page([row.to_wire() for row in rows], more)


async def delete_container(request: Request) -> HttpResponse:
    """It is gone at once; its host stops what it runs and removes its files."""
    found = await container(request)
    await repository(request).containers.end(found.id, "deleted")
    return JSONResponse({"id": found.id, "object": "container.deleted", "deleted": True})


# ---- files ---------------------------------------------------------------------------------------


async def create_container_file(request: Request) -> HttpResponse:
    """A file uploaded (multipart `file`), or copied from `/v1/files` (JSON `file_id`), into
    `/mnt/data`."""
    found = await container(request)
    store = repository(request)
    file_id, now = new_id("cfile"), int(time.time())
    if is_multipart(request):
        upload = await upload_of(request, (), "a `file`")
        try:
            path = f"{DATA_MOUNT}/{upload.filename}"
            size = await store.files.write_parts(file_id, upload.pieces())
            row = await store.containers.add_file(
                ContainerFileRow(file_id, found.id, path, size, "user", now, False), project_quotas(request)
            )
        except BaseException:
            await asyncio.shield(store.files.drop_parts(file_id))
            raise
        finally:
            await upload.close()
        return JSONResponse(row.to_wire())
    body = await read_model(ContainerFileFromId, request, limits(request), most=MAX_BODY_BYTES)
    source = await store.files.get(body.file_id, principal(request).project) if plausible_id(body.file_id) else None
    if source is None:
        raise file_not_found(body.file_id, "file_id")
    await store.files.copy_parts(source.id, file_id)
    try:
        row = await store.containers.add_file(
            ContainerFileRow(file_id, found.id, f"{DATA_MOUNT}/{source.filename}", source.bytes, "user", now, False),
            project_quotas(request),
        )
    except BaseException:  # refused (a quota) or cancelled: the copy's parts go with it
        await asyncio.shield(store.files.drop_parts(file_id))
        raise
    return JSONResponse(row.to_wire())


async def _container_file(request: Request) -> ContainerFileRow:
    found = await container(request)
    file_id = request.path_params["file_id"]
    row = await repository(request).containers.file(found.id, file_id) if plausible_id(file_id) else None
    if row is None:
        raise NotFoundError(f"No file with id '{file_id}' in container '{found.id}'.", param="file_id")
    return row


async def list_container_files(request: Request) -> HttpResponse:
    found = await container(request)
    page = page_params(request)
    try:
        rows, more = await repository(request).containers.files_page(
            found.id, after=page.after, limit=page.limit, order=page.order
        )
    except LookupError as missing:
        raise InvalidRequestError(f"No file with id '{missing}' in this container.", param="after") from None
    return list_page([row.to_wire() for row in rows], more)


async def retrieve_container_file(request: Request) -> HttpResponse:
    return JSONResponse((await _container_file(request)).to_wire())


async def container_file_content(request: Request) -> HttpResponse:
    row = await _container_file(request)
    return StreamingResponse(
        repository(request).files.parts(row.id),
        media_type="application/octet-stream",
        headers={"content-length": str(row.bytes)},
    )


async def delete_container_file(request: Request) -> HttpResponse:
    row = await _container_file(request)
    await repository(request).containers.delete_file(row.container_id, row.id)
    return JSONResponse({"id": row.id, "object": "container.file.deleted", "deleted": True})
