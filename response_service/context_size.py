"""The size of a request's context, at request time: the chat-completions messages its first
turn would send (the chain's context or the conversation's items, then the input), estimated
in tokens (`context/tokens.py`); and the checks made with it before anything is kept.

- `compaction` items in `input` must be this server's, made for the key's project;
- with `truncation: "disabled"` and no `context_management`, a request longer than the
  model's known window is refused: 400 `context_length_exceeded`.
"""

from __future__ import annotations

from typing import Any

from chat_completions import converter
from chat_completions.tool_table import ToolTable
from chat_completions.turn_messages import turn_messages
from context import compaction
from context.tokens import request_tokens
from models.errors import ContextLengthExceededError, InvalidRequestError
from models.responses import Response
from sealing.secret_box import SecretBox
from upstream.windows import ContextWindows


def check_compactions(items: list[Any], box: SecretBox | None, project: str) -> None:
    for index, item in enumerate(items):
        if item.type == "compaction" and compaction.open_content(item.encrypted_content, box, project) is None:
            raise InvalidRequestError(
                f"Invalid 'input[{index}].encrypted_content': this compaction item was not made by this server for "
                "this project (or it was altered), so it cannot be read.",
                param=f"input[{index}].encrypted_content",
                code="invalid_encrypted_content",
            )


def request_size(
    response: Response,
    known_context: list[dict[str, Any]],
    history: list[Any],
    items: list[Any],
    box: SecretBox | None,
    project: str,
) -> int:
    """Estimated tokens of the response's first request upstream (MCP tools not counted: they
    are listed later)."""
    table = ToolTable(response.tools, [])
    messages = turn_messages(
        table,
        conversation=history,
        known_context=known_context,
        inputs=items,
        tool_results={},
        compacted=compaction.renderer(box, project),
    )
    return request_tokens(converter.build_chat_request(response, messages.sent, None, table))


async def check_fits(
    response: Response,
    known_context: list[dict[str, Any]],
    history: list[Any],
    items: list[Any],
    box: SecretBox | None,
    project: str,
    windows: ContextWindows,
) -> None:
    if response.truncation != "disabled" or response.compaction is not None or response.compact_only:
        return  # it will be cut or compacted to fit
    window = await windows.of(response.model)
    if window is None:
        return
    tokens = request_size(response, known_context, history, items, box, project)
    if tokens > window:
        raise ContextLengthExceededError(tokens, window)
