"""Route handlers of OpenAI's Conversations API: `/v1/conversations` and its items.

A conversation is a list of items that responses created with `conversation` read as their
context and add to when they end. Items may also be added and deleted directly, except
while a response runs on the conversation (400 `conversation_locked`, as OpenAI answers).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.responses import Response as HttpResponse

from http_plumbing.body import read_json
from http_plumbing.errors import from_validation_error
from http_plumbing.params import limits, list_page, page_params, plausible_id, principal, repository
from models.conversations import AddConversationItems, CreateConversation, ItemsQuery, UpdateConversation
from models.errors import InvalidRequestError, NotFoundError
from models.ids import new_id
from response_service.preparation import as_stored, resolved, with_message_types
from store.conversations import ConversationRow, conversation_not_found, new_conversation


async def _parsed(model: type[BaseModel], request: Request) -> Any:
    payload = await read_json(request, limits(request))
    if "items" in payload:
        payload["items"] = with_message_types(payload["items"])
    try:
        return model.model_validate(payload)
    except ValidationError as error:
        raise from_validation_error(error, payload) from None


def _include(request: Request) -> None:
    """`include` is accepted on item routes, as OpenAI's are; nothing here is left out to include."""
    try:
        ItemsQuery(include=request.query_params.getlist("include") or request.query_params.getlist("include[]"))
    except ValidationError as error:
        raise from_validation_error(error) from None


async def _conversation(request: Request) -> ConversationRow:
    conversation_id = request.path_params["conversation_id"]
    found = await repository(request).conversations.get(conversation_id) if plausible_id(conversation_id) else None
    if found is None or found.project != principal(request).project:
        raise conversation_not_found(conversation_id)
    return found


async def create_conversation(request: Request) -> HttpResponse:
    body = await _parsed(CreateConversation, request)
    project = principal(request).project
    items = as_stored(await resolved(body.items or [], repository(request).responses, project))
    row = new_conversation(new_id("conv"), body.metadata, project)
    await repository(request).conversations.create(row, items)
    return JSONResponse(row.to_wire())


async def retrieve_conversation(request: Request) -> HttpResponse:
    return JSONResponse((await _conversation(request)).to_wire())


async def update_conversation(request: Request) -> HttpResponse:
    conversation = await _conversation(request)
    body = await _parsed(UpdateConversation, request)
    updated = await repository(request).conversations.update(conversation.id, body.metadata or {})
    if updated is None:
        raise conversation_not_found(conversation.id)
    return JSONResponse(updated.to_wire())


async def delete_conversation(request: Request) -> HttpResponse:
    conversation = await _conversation(request)
    ran_on_it = await repository(request).conversations.delete(conversation.id)
    request.app.state.runner.erase_histories_soon(ran_on_it)
    return JSONResponse({"id": conversation.id, "object": "conversation.deleted", "deleted": True})


async def list_items(request: Request) -> HttpResponse:
    conversation = await _conversation(request)
    _include(request)
    page = page_params(request)
    try:
        items, has_more = await repository(request).conversations.list_items(
            conversation.id, after=page.after, limit=page.limit, order=page.order
        )
    except LookupError as missing:
        raise InvalidRequestError(f"No item with id '{missing}' in this conversation.", param="after") from None
    return list_page(items, has_more)


async def add_items(request: Request) -> HttpResponse:
    conversation = await _conversation(request)
    _include(request)
    body = await _parsed(AddConversationItems, request)
    items = as_stored(await resolved(body.items, repository(request).responses, conversation.project))
    await repository(request).conversations.add_items(conversation.id, items)
    return list_page([data for _, data in items], False)


async def retrieve_item(request: Request) -> HttpResponse:
    conversation = await _conversation(request)
    _include(request)
    item_id = request.path_params["item_id"]
    item = await repository(request).conversations.item(conversation.id, item_id) if plausible_id(item_id) else None
    if item is None:
        raise NotFoundError(f"Item with id '{item_id}' not found in conversation '{conversation.id}'.", param="item_id")
    return JSONResponse(item)


async def delete_item(request: Request) -> HttpResponse:
    conversation = await _conversation(request)
    item_id = request.path_params["item_id"]
    if not plausible_id(item_id) or not await repository(request).conversations.delete_item(conversation.id, item_id):
        raise NotFoundError(f"Item with id '{item_id}' not found in conversation '{conversation.id}'.", param="item_id")
    return JSONResponse(conversation.to_wire())
