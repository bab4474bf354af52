"""A create request's `prompt: {id, version?, variables}` made into what the response runs
with: the prompt's text, its variables put in, becomes the instructions (before the
request's own, if it has some); image and file variables go into a user message before the
input, as OGX does (their placeholders render empty). A prompt is the project's; a variable
the version does not declare, or one it declares and the request leaves out, is refused
naming it. Like `instructions`, a prompt is not carried over by `previous_response_id`.

What the prompt would render to is measured before it is rendered, and refused past
`budget` (what a response's workflow may start with: the instructions travel in it), so no
variable can make the server build more than that."""

from __future__ import annotations

from typing import Any

from models.errors import InvalidRequestError, NotFoundError
from models.items import InputText, MessageItem
from models.prompts import render, rendered_bytes
from models.requests import CreateResponseRequest
from store.prompts import Prompts


async def with_prompt(
    request: CreateResponseRequest, prompts: Prompts, project: str, budget: int
) -> tuple[CreateResponseRequest, dict[str, Any] | None]:
    """The request as its prompt makes it, and the `prompt` its response echoes."""
    reference = request.prompt
    if reference is None:
        return request, None
    asked = int(reference.version) if reference.version is not None else None
    found = await prompts.get(project, reference.id, asked)
    if found is None:
        exists = asked is not None and await prompts.get(project, reference.id) is not None
        raise NotFoundError(
            f"Prompt with id '{reference.id}'" + (f" has no version {asked}." if exists else " not found."),
            param="prompt.version" if exists else "prompt.id",
        )
    given = reference.variables or {}
    for name in given:
        if name not in found.variables:
            raise InvalidRequestError(
                f"Unknown variable '{name[:64]}': version {found.version} of prompt '{found.prompt_id}' declares "
                f"{found.variables or 'none'}.",
                param=f"prompt.variables.{name[:64]}",
                code="unknown_parameter",
            )
    for name in found.variables:
        if name not in given:
            raise InvalidRequestError(
                f"Missing variable '{name}' of prompt '{found.prompt_id}' (version {found.version}).",
                param=f"prompt.variables.{name}",
                code="missing_required_parameter",
            )
    texts = {
        name: value if isinstance(value, str) else value.text if isinstance(value, InputText) else ""
        for name, value in given.items()
    }
    attached = [value for value in given.values() if not isinstance(value, str | InputText)]
    sizes = rendered_bytes(found.prompt, texts)
    size = sum(sizes.values()) + len((request.instructions or "").encode())
    if size > budget:
        largest = max((name for name in sizes if name), key=sizes.__getitem__, default=None)
        raise InvalidRequestError(
            f"Prompt '{found.prompt_id}' with these variables would make instructions of {size} bytes; at most "
            f"{budget} on this server.",
            param=f"prompt.variables.{largest}" if largest else "prompt",
            code="string_above_max_length",
        )
    rendered = render(found.prompt, texts)
    instructions = rendered + (f"\n\n{request.instructions}" if request.instructions else "")
    items = request.input_items()
    if attached:
        items = [MessageItem(role="user", content=attached), *items]
    made = request.model_copy(update={"instructions": instructions, "input": items, "prompt": None})
    return made, reference.wire(found.version)
