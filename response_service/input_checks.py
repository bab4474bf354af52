"""What input items must be, beyond their types (`models/items.py`): checks of a request's
`input` and of a steer's, made before anything is kept (`response_service/preparation.py`)."""

from __future__ import annotations

from typing import Any

from models.client_tools import BY_OUTPUT_TYPE as CLIENT_BY_OUTPUT_TYPE
from models.client_tools import is_client_call
from models.errors import InvalidRequestError


def check_items(items: list[Any], known_calls: set[str]) -> None:
    """Each call's output follows its call (one of `known_calls`, or one earlier in `items`);
    images and files come inline; a `compaction_trigger` comes last."""
    for index, item in enumerate(items):
        param = f"input[{index}]"
        match item.type:
            case "function_call" | "custom_tool_call":
                known_calls.add(item.call_id)
            case _ if is_client_call(item):
                known_calls.add(item.call_id)
            case kind if kind in CLIENT_BY_OUTPUT_TYPE and item.call_id not in known_calls:
                raise InvalidRequestError(
                    f"No tool call found for {kind.removesuffix('_output')} output with call_id {item.call_id}.",
                    param=param,
                    code="invalid_value",
                )
            case "function_call_output" | "custom_tool_call_output":
                if item.call_id not in known_calls:
                    kind = "function" if item.type == "function_call_output" else "custom tool"
                    raise InvalidRequestError(
                        f"No tool call found for {kind} call output with call_id {item.call_id}.",
                        param=param,
                        code="invalid_value",
                    )
            case "message":
                for part_index, part in enumerate(item.content_parts()):
                    _check_part(part, f"{param}.content[{part_index}]")
            case "compaction_trigger" if index != len(items) - 1:
                raise InvalidRequestError(
                    "A `compaction_trigger` item must be the last input item.", param=param, code="invalid_value"
                )


def _check_part(part: Any, param: str) -> None:
    match part.type:
        case "input_image" if not part.image_url:
            raise InvalidRequestError(
                "Images must be sent as `image_url` (a URL or a data URL); file ids are not supported.",
                param=param,
                code="unsupported_value",
            )
        case "input_file" if not part.file_data:
            raise InvalidRequestError(
                "Files must be sent inline as `file_data`; file ids and URLs are not supported.",
                param=param,
                code="unsupported_value",
            )
