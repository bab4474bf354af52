"""From a request body to a response ready to start, or an `ApiError`: every check that can
refuse a request happens here, before anything reaches Temporal."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from api.errors import from_validation_error
from models.errors import ConflictError, InvalidRequestError, NotFoundError
from models.ids import new_id
from models.requests import CreateResponseRequest
from models.responses import Response
from store.repository import ResponseRepository

ITEM_ID_PREFIX = {"message": "msg", "function_call": "fc", "function_call_output": "fco", "reasoning": "rs"}


@dataclass(frozen=True)
class PreparedResponse:
    request: CreateResponseRequest
    response: Response
    items: list[tuple[str, dict[str, Any]]]


def parse_body(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except ValueError:
        raise InvalidRequestError(
            "We could not parse the JSON body of your request. Send a valid JSON object.", code="invalid_json"
        ) from None
    if not isinstance(payload, dict):
        raise InvalidRequestError("The request body must be a JSON object.", code="invalid_json")
    return payload


def validate(payload: dict[str, Any]) -> CreateResponseRequest:
    if isinstance(payload.get("input"), list):
        # An "easy" message ({role, content}) may leave out its type.
        payload["input"] = [
            {"type": "message", **item} if isinstance(item, dict) and "type" not in item and "role" in item else item
            for item in payload["input"]
        ]
    try:
        return CreateResponseRequest.model_validate(payload)
    except ValidationError as error:
        raise from_validation_error(error) from None


async def prepare(body: bytes, repository: ResponseRepository) -> PreparedResponse:
    request = validate(parse_body(body))
    items = request.input_items()
    previous_context: list[dict[str, Any]] = []
    if request.previous_response_id is not None:
        previous = await repository.get_response(request.previous_response_id)
        if previous is None:
            raise NotFoundError(
                f"Previous response with id '{request.previous_response_id}' not found.",
                param="previous_response_id",
                code="previous_response_not_found",
            )
        if not previous.is_terminal:
            raise ConflictError(
                f"Previous response with id '{request.previous_response_id}' is still {previous.status}; "
                "wait for it to finish before continuing from it.",
                param="previous_response_id",
            )
        previous_context = await repository.chat_context(previous.id) or []
    if not items and request.previous_response_id is None:
        raise InvalidRequestError("Missing required parameter: 'input'.", param="input",
                                  code="missing_required_parameter")
    _check_items(items, previous_context)
    response = Response.from_request(new_id("resp"), int(time.time()), request)
    stored = [
        (item_id, item.as_listed(item_id))
        for item in items
        for item_id in [item.id or new_id(ITEM_ID_PREFIX[item.type])]
    ]
    return PreparedResponse(request=request, response=response, items=stored)


def _check_items(items: list[Any], previous_context: list[dict[str, Any]]) -> None:
    known_calls = {
        call["id"] for message in previous_context for call in message.get("tool_calls") or []
    }
    for index, item in enumerate(items):
        param = f"input[{index}]"
        match item.type:
            case "item_reference":
                raise InvalidRequestError(
                    "Item references are not supported; send the item itself.", param=param, code="unsupported_value"
                )
            case "function_call":
                known_calls.add(item.call_id)
            case "function_call_output":
                if item.call_id not in known_calls:
                    raise InvalidRequestError(
                        f"No tool call found for function call output with call_id {item.call_id}.",
                        param=param, code="invalid_value",
                    )
            case "message":
                for part_index, part in enumerate(item.content_parts()):
                    _check_part(part, f"{param}.content[{part_index}]")


def _check_part(part: Any, param: str) -> None:
    match part.type:
        case "input_image" if not part.image_url:
            raise InvalidRequestError(
                "Images must be sent as `image_url` (a URL or a data URL); file ids are not supported.",
                param=param, code="unsupported_value",
            )
        case "input_file" if not part.file_data:
            raise InvalidRequestError(
                "Files must be sent inline as `file_data`; file ids and URLs are not supported.",
                param=param, code="unsupported_value",
            )
